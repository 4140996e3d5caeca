// An assistant's chat-bot channels on its console page (bots/templates/bots/_channels.html): lists them with the
// callback URL to paste into Feishu, DingTalk or WeCom, adds one with the fields its kind needs (GET /api/bot-kinds/),
// sends a signed sample event through the real callback (测试) and removes one. Calls the REST API (bots/api.py).
(function () {
  "use strict";
  const section = document.getElementById("channels");
  if (!section) return;
  const { api, el, button, errorText } = window.zhiku;
  const T = {
    kinds: { feishu: gettext("Feishu"), dingtalk: gettext("DingTalk"), wecom: gettext("WeCom") },
    none: gettext("No channel yet."),
    on: gettext("on"),
    off: gettext("off"),
    test: gettext("Test"),
    remove: gettext("Remove"),
    copy: gettext("Copy"),
    copied: gettext("Copied."),
    confirmRemove: (name) => interpolate(gettext("Remove the channel %(name)s? Its callback URL stops working at once."), { name }, true),
    removed: gettext("Removed."),
    added: gettext("Added. Paste its callback URL into the platform's console."),
    testing: gettext("Sending a signed sample event…"),
    testOk: (name) => interpolate(gettext("%(name)s: the test passed."), { name }, true),
    testPartly: (name) => interpolate(gettext("%(name)s: no check failed, but not everything could be verified (below)."), { name }, true),
    testFailed: (name) => interpolate(gettext("%(name)s: the test failed."), { name }, true),
    callback: gettext("Callback"),
    token: gettext("Access token"),
    unverified: gettext("Not verified"),
    address: gettext("Address"),
    optional: gettext("optional"),
  };
  // Each field as its platform's console names it (bots/kinds.py says where it is found there).
  const LABELS = {
    app_id: "App ID", bot_open_id: "Bot open_id", app_secret: "App Secret", verification_token: "Verification Token",
    encrypt_key: "Encrypt Key", robot_code: "RobotCode (AppKey)", corp_id: gettext("Company ID (CorpID)"),
    agent_id: "AgentId", msg_format: gettext("Message format"), secret: "Secret", token: "Token",
    encoding_aes_key: "EncodingAESKey",
  };
  const rows = section.querySelector(".channel-rows");
  const status = section.querySelector(".channel-status");
  const form = section.querySelector(".channel-form");
  const fields = section.querySelector(".channel-fields");
  const base = section.dataset.base || "";
  let kinds = {};

  function absolute(path) { return base + path; }

  async function copy(text) {
    try { await navigator.clipboard.writeText(text); status.textContent = T.copied; } catch (e) { status.textContent = text; }
  }

  function row(channel) {
    const tr = el("tr");
    tr.dataset.channelId = String(channel.id);
    tr.appendChild(el("td", channel.name));
    tr.appendChild(el("td", T.kinds[channel.kind] || channel.kind));
    const url = el("td");
    url.appendChild(el("code", absolute(channel.callback_url), { class: "channel-url" }));
    url.appendChild(button(T.copy, () => copy(absolute(channel.callback_url)), "small"));
    tr.appendChild(url);
    const state = el("td");
    state.appendChild(el("span", channel.enabled ? T.on : T.off, { class: "badge" }));
    tr.appendChild(state);
    const actions = el("td", null, { class: "actions" });
    actions.appendChild(button(T.test, () => test(channel), "channel-test"));
    actions.appendChild(button(T.remove, () => remove(channel), "danger channel-remove"));
    tr.appendChild(actions);
    return tr;
  }

  async function load() {
    try {
      const data = await api("GET", section.dataset.channelsUrl + "?page_size=100");
      rows.replaceChildren(...(data.results.length ? data.results.map(row)
        : [(() => { const tr = el("tr"); tr.appendChild(el("td", T.none, { colspan: "5", class: "muted" })); return tr; })()]));
    } catch (e) { status.textContent = errorText(e); }
  }

  // One line of the test's report: what a check showed (✓), why it failed (✗), what it could not verify (?), or
  // why the platform cannot reach the callback (⚠); bots/selftest.py says each in words.
  function line(state, label, text) {
    const words = interpolate(gettext("%(check)s: %(result)s"), { check: label, result: text }, true);  // 「：」 in Chinese
    return [el("br"), el("span", words, { class: "channel-check", "data-state": state })];
  }

  function step(label, result) {
    const mark = (result.ok ? "✓" : "✗") + (result.status ? " " + result.status : "");
    return line(result.ok ? "ok" : "failed", label, [mark, result.detail, result.checked].filter(Boolean).join(" · "));
  }

  async function test(channel) {
    status.textContent = T.testing;
    delete status.dataset.ok;
    try {
      const r = await api("POST", section.dataset.channelsUrl + channel.id + "/test/");
      // 「测试通过」 only when everything was verified: a sample signed with the stored secret proves only the path.
      const head = r.complete ? T.testOk(channel.name) : r.ok ? T.testPartly(channel.name) : T.testFailed(channel.name);
      const lines = [step(T.callback, r.callback), r.token ? step(T.token, r.token) : [],
                     ...r.unverified.map((text) => line("unverified", T.unverified, "? " + text)),
                     r.address.public ? [] : line("warning", T.address, "⚠ " + r.address.detail)].flat();
      status.replaceChildren(el("strong", head), ...lines);
      status.dataset.complete = String(r.complete);
      status.dataset.ok = String(r.ok);
    } catch (e) { status.textContent = errorText(e); }
  }

  async function remove(channel) {
    if (!window.confirm(T.confirmRemove(channel.name))) return;
    try {
      await api("DELETE", section.dataset.channelsUrl + channel.id + "/");
      status.textContent = T.removed;
      load();
    } catch (e) { status.textContent = errorText(e); }
  }

  // The inputs the chosen kind needs: settings as text, credentials as password fields; each with its help line.
  function drawFields() {
    const kind = kinds[form.elements.kind.value];
    fields.replaceChildren();
    if (!kind) return;
    for (const [group, items, type] of [["settings", kind.settings, "text"], ["credentials", kind.credentials, "password"]]) {
      for (const field of items) {
        const label = el("label", null, { class: "field" });
        label.appendChild(el("strong", (LABELS[field.name] || field.name) + (field.required ? "" : ` (${T.optional})`), { class: "field-title" }));
        const input = el("input", null, { type, name: field.name, "data-group": group, autocomplete: "off", maxlength: "512" });
        if (field.required) input.required = true;
        label.appendChild(input);
        if (field.help) label.appendChild(el("span", field.help, { class: "help" }));
        fields.appendChild(label);
      }
    }
  }

  form.elements.kind.addEventListener("change", drawFields);
  form.addEventListener("submit", async (e) => {
    e.preventDefault();
    const body = { kind: form.elements.kind.value, name: form.elements.name.value.trim(), settings: {}, credentials: {} };
    for (const input of fields.querySelectorAll("input[data-group]")) {
      if (input.value.trim()) body[input.dataset.group][input.name] = input.value.trim();
    }
    try {
      await api("POST", section.dataset.channelsUrl, body);
      status.textContent = T.added;
      form.reset();
      drawFields();
      load();
    } catch (err) { status.textContent = errorText(err); }
  });

  (async function start() {
    try {
      for (const kind of await api("GET", section.dataset.kindsUrl)) kinds[kind.kind] = kind;
      drawFields();
    } catch (e) { status.textContent = errorText(e); }
    load();
  })();
})();
