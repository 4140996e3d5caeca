// The API tokens page (templates/accounts/tokens.html): create a token (its key shown once, with a copy button),
// revoke one or all, through /api/auth/tokens/ with the session and its CSRF token (static/zhiku/console.js).
(function () {
  "use strict";
  const { api, el, button, errorText, formatTime } = window.zhiku;
  const T = {
    never: gettext("Never"),
    neverUsed: gettext("Never used"),
    revoke: gettext("Revoke"),
    copied: gettext("Copied."),
    confirmRevoke: (name) => interpolate(gettext("Revoke the token \u201c%(name)s\u201d? Programs using it stop working at once."), { name }, true),
    confirmRevokeAll: gettext("Revoke all your tokens? Every program using one stops working at once."),
  };
  const form = document.getElementById("token-form");
  const nameInput = document.getElementById("token-name");
  const expiry = document.getElementById("token-expiry");
  const errorBox = document.getElementById("token-error");
  const panel = document.getElementById("new-token");
  const keyInput = document.getElementById("new-token-key");
  const copied = document.getElementById("new-token-copied");
  const rows = document.getElementById("token-rows");
  const table = document.getElementById("token-table");
  const empty = document.getElementById("no-tokens");
  const revokeAll = document.getElementById("revoke-all");

  function showError(error) {
    errorBox.textContent = error ? errorText(error) : "";
    errorBox.hidden = !error;
  }

  function showEmpty() {
    const none = !rows.children.length;
    table.hidden = none; empty.hidden = !none; revokeAll.hidden = none;
  }

  async function revoke(id, name, row) {
    if (!window.confirm(T.confirmRevoke(name || "—"))) return;
    try {
      await api("DELETE", `/api/auth/tokens/${id}/`);
      row.remove();
      showEmpty();
    } catch (e) { showError(e); }
  }

  function tokenRow(token) {
    const row = el("tr", null, { "data-token-id": token.id });
    row.append(el("td", token.name || "—"));
    const key = el("td", null, { class: "nowrap" });
    key.append(el("code", token.key_prefix + "…"));
    row.append(key, el("td", formatTime(token.created), { class: "nowrap" }),
      el("td", token.expiry ? formatTime(token.expiry) : T.never, { class: "nowrap" }),
      el("td", token.last_used ? formatTime(token.last_used) : T.neverUsed, { class: "nowrap" }));
    const actions = el("td", null, { class: "actions" });
    const b = button(T.revoke, () => revoke(token.id, token.name, row), "danger revoke");
    b.dataset.tokenId = token.id;
    actions.append(b);
    row.append(actions);
    return row;
  }

  async function reload() {
    const data = await api("GET", "/api/auth/tokens/?page_size=100");
    rows.replaceChildren(...data.results.map(tokenRow));
    showEmpty();
  }

  form.addEventListener("submit", async (event) => {
    event.preventDefault();
    showError(null);
    const body = { name: nameInput.value.trim() };
    body.expires_in_days = expiry.value === "" ? null : Number(expiry.value);
    try {
      const created = await api("POST", "/api/auth/tokens/", body);
      keyInput.value = created.token;
      copied.hidden = true;
      panel.hidden = false;
      keyInput.focus();
      keyInput.select();
      form.reset();
      await reload();
    } catch (e) { showError(e); }
  });

  document.getElementById("new-token-copy").addEventListener("click", async () => {
    keyInput.select();
    try {
      await navigator.clipboard.writeText(keyInput.value);
    } catch (e) {
      document.execCommand("copy");  // a page served over plain http has no clipboard API
    }
    copied.hidden = false;
  });

  revokeAll.addEventListener("click", async () => {
    if (!window.confirm(T.confirmRevokeAll)) return;
    try {
      await api("DELETE", "/api/auth/tokens/");
      rows.replaceChildren();
      showEmpty();
    } catch (e) { showError(e); }
  });

  for (const b of rows.querySelectorAll("button.revoke")) {
    b.addEventListener("click", () => revoke(b.dataset.tokenId, b.dataset.name, b.closest("tr")));
  }
})();
