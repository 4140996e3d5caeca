// API keys of an assistant or a KB, on the console pages (assistants/templates/assistants/_keys.html): each
// section[data-keys-url] lists its live keys (never the keys: their first characters), creates one and shows it
// ONCE with a copy button, and revokes keys. Calls the REST API (assistants/api.py) through window.zhiku.
(function () {
  "use strict";
  const { api, el, button, errorText, formatTime } = window.zhiku;
  // Visible strings: translated by Django's JavaScript catalogue (/jsi18n/, docs/i18n.md).
  const T = {
    none: gettext("No keys yet."),
    never: gettext("never"),
    siteDefault: gettext("site default"),
    revoke: gettext("Revoke"),
    confirmRevoke: (name) => interpolate(gettext("Revoke the key %(name)s? Whatever uses it stops working at once."), { name }, true),
    revoked: gettext("Revoked."),
    created: gettext("Created. Copy the key below: it will not be shown again."),
    copied: gettext("Copied."),
    copyFailed: gettext("Could not copy; select the key and copy it by hand."),
    unnamed: gettext("(no name)"),
  };

  // Copy the text of `node` to the clipboard; falls back to selecting it (a page over plain HTTP has no clipboard API).
  async function copyText(node, status) {
    const text = node.textContent;
    try {
      await navigator.clipboard.writeText(text);
      if (status) status.textContent = T.copied;
    } catch (e) {
      const range = document.createRange();
      range.selectNodeContents(node);
      const selection = window.getSelection();
      selection.removeAllRanges(); selection.addRange(range);
      let ok = false;
      try { ok = document.execCommand("copy"); } catch (e2) { ok = false; }
      if (status) status.textContent = ok ? T.copied : T.copyFailed;
    }
  }

  function mount(section) {
    const url = section.dataset.keysUrl;
    const rows = section.querySelector(".key-rows");
    const form = section.querySelector(".key-form");
    const once = section.querySelector(".key-once");
    const value = section.querySelector(".key-value");
    const status = section.querySelector(".key-status");

    function row(key) {
      const tr = el("tr");
      tr.dataset.keyId = String(key.id);
      tr.appendChild(el("td", key.name || T.unnamed));
      const prefix = el("td"); prefix.appendChild(el("code", key.prefix + "…")); tr.appendChild(prefix);
      tr.appendChild(el("td", formatTime(key.created_at), { class: "nowrap" }));
      tr.appendChild(el("td", key.last_used_at ? formatTime(key.last_used_at) : T.never, { class: "nowrap" }));
      tr.appendChild(el("td", key.rate_limit || T.siteDefault, { class: "num" }));
      const actions = el("td", null, { class: "actions" });
      actions.appendChild(button(T.revoke, () => revoke(key), "danger key-revoke"));
      tr.appendChild(actions);
      return tr;
    }

    async function load() {
      try {
        const data = await api("GET", url + "?page_size=100");
        rows.replaceChildren(...(data.results.length ? data.results.map(row)
          : [(() => { const tr = el("tr"); tr.appendChild(el("td", T.none, { colspan: "6", class: "muted" })); return tr; })()]));
      } catch (e) { status.textContent = errorText(e); }
    }

    async function revoke(key) {
      if (!window.confirm(T.confirmRevoke(key.name || key.prefix + "…"))) return;
      try {
        await api("DELETE", url + key.id + "/");
        status.textContent = T.revoked;
        load();
      } catch (e) { status.textContent = errorText(e); }
    }

    form.addEventListener("submit", async (e) => {
      e.preventDefault();
      const body = { name: form.elements.name.value.trim() };
      const rate = form.elements.rate_limit.value.trim();
      body.rate_limit = rate ? Number(rate) : null;
      try {
        const created = await api("POST", url, body);
        value.textContent = created.key;
        once.hidden = false;
        status.textContent = T.created;
        form.reset();
        load();
      } catch (err) { status.textContent = errorText(err); }
    });
    section.querySelector(".key-copy").addEventListener("click", () => copyText(value, status));
    // Once saved, the key leaves the page: nothing shows it again.
    section.querySelector(".key-done").addEventListener("click", () => { value.textContent = ""; once.hidden = true; status.textContent = ""; });
    load();
  }

  document.querySelectorAll("section[data-keys-url]").forEach(mount);
  window.zhikuKeys = { copyText };
})();
