// The document page, for editors: edit a chunk's text (PATCH re-embeds it) and switch it on or off, add a chunk
// by hand (POST, embedded and indexed at once), and change which groups may read the document (PATCH).
(function () {
  "use strict";
  const { api, errorText, el, button } = window.zhiku;
  // Visible strings: translated by Django's JavaScript catalogue (/jsi18n/, docs/i18n.md).
  const T = {
    edit: gettext("Edit"), save: gettext("Save"), cancel: gettext("Cancel"), saving: gettext("Saving…"),
    disable: gettext("Disable"), enable: gettext("Enable"), disabled: gettext("Disabled"),
    failed: gettext("Saving failed: "),
    only: (groups) => interpolate(gettext("Only: %(groups)s"), { groups: groups.join(gettext(", ")) }, true),
    everyone: gettext("Readable by every member of the knowledge base"),
    saved: gettext("Saved."),
    adding: gettext("Adding…"),
    addFailed: gettext("Adding failed: "),
  };
  const root = document.getElementById("document-page");
  const base = `/api/kbs/${root.dataset.kbId}/chunks/`;
  const documentUrl = `/api/kbs/${root.dataset.kbId}/documents/${root.dataset.documentId}/`;

  // --- who may read the document ---------------------------------------------------------------------
  const restriction = document.getElementById("restriction-form");
  if (restriction) {
    restriction.addEventListener("submit", async (event) => {
      event.preventDefault();
      const status = document.getElementById("restriction-status");
      const save = document.getElementById("restriction-save");
      const names = document.getElementById("restriction-groups").value.split(/[,，]/).map((n) => n.trim()).filter(Boolean);
      save.disabled = true;
      try {
        const doc = await api("PATCH", documentUrl, { restricted_to_groups: names });
        const groups = doc.restricted_to_groups;
        document.getElementById("restriction-current").textContent = groups.length ? T.only(groups) : T.everyone;
        document.getElementById("restriction-groups").value = groups.join(",");
        status.className = "small ok-text";
        status.textContent = T.saved;
      } catch (e) {
        status.className = "small error-text";
        status.textContent = T.failed + errorText(e);
      }
      save.disabled = false;
    });
  }

  // --- restoring an earlier version (POST …/versions/<n>/restore/: ingested again as a new version) -----------
  // It asks first (static/zhiku/confirm.js), naming the new version's number: one past every version listed
  // (knowledge/ingestion/versions.py next_number; a version still being ingested makes the restore 409 busy).
  const versionStatus = document.getElementById("version-status");
  document.querySelectorAll(".version-restore").forEach((restore) => {
    restore.addEventListener("click", async () => {
      const current = parseInt(versionStatus.dataset.current, 10);
      const numbers = [...document.querySelectorAll("#versions tr.version")].map((row) => parseInt(row.dataset.number, 10));
      const next = Math.max(current, ...numbers) + 1;
      if (!(await window.zhikuConfirm("restore", { n: restore.dataset.number, next, current }))) return;
      restore.disabled = true;
      versionStatus.className = "small muted";
      versionStatus.textContent = versionStatus.dataset.restoring;
      try {
        const restored = await api("POST", `${documentUrl}versions/${restore.dataset.number}/restore/`);
        versionStatus.className = "small ok-text";
        versionStatus.textContent = versionStatus.dataset.restored;
        // The page shows the restored version once it serves: its row, folded into the document when ready,
        // then redirects (308) to the document, which carries its number.
        const versionUrl = `/api/kbs/${root.dataset.kbId}/documents/${restored.id}/`;
        for (let tries = 0; tries < 400; tries += 1) {
          const doc = await api("GET", versionUrl);
          if (doc.version >= restored.version && doc.status === "ready") {
            window.location.reload();
            return;
          }
          if (doc.status === "failed") {
            versionStatus.className = "small error-text";
            versionStatus.textContent = versionStatus.dataset.failed + (doc.error && doc.error.message || "");
            restore.disabled = false;
            return;
          }
          await new Promise((resolve) => setTimeout(resolve, 1500));
        }
      } catch (e) {
        versionStatus.className = "small error-text";
        versionStatus.textContent = versionStatus.dataset.failed + errorText(e);
        restore.disabled = false;
      }
    });
  });

  // --- a chunk written by hand ---------------------------------------------------------------------------
  const adder = document.getElementById("chunk-add-form");
  if (adder) {
    adder.addEventListener("submit", async (event) => {
      event.preventDefault();
      const status = document.getElementById("chunk-add-status");
      const submit = document.getElementById("chunk-add-submit");
      const path = document.getElementById("chunk-add-path").value.split(/[>›]/).map((h) => h.trim()).filter(Boolean);
      submit.disabled = true;
      status.className = "small muted";
      status.textContent = T.adding;
      try {
        const chunk = await api("POST", base, {
          document: parseInt(root.dataset.documentId, 10), content: document.getElementById("chunk-add-content").value, section_path: path,
        });
        // The new chunk is the last one: show the last page, scrolled to it.
        window.location.assign(`?page=999999#chunk-${chunk.id}`);
      } catch (e) {
        status.className = "small error-text";
        status.textContent = T.addFailed + errorText(e);
        submit.disabled = false;
      }
    });
  }

  function setEnabled(article, enabled) {
    article.dataset.enabled = enabled ? "1" : "";
    article.classList.toggle("disabled", !enabled);
    article.querySelector(".state").textContent = enabled ? "" : T.disabled;
    article.querySelector("button.toggle").textContent = enabled ? T.disable : T.enable;
  }

  function startEdit(article) {
    if (article.querySelector("textarea")) return;
    const text = article.querySelector(".text");
    const area = el("textarea", null, { class: "chunk-editor" });
    area.value = window.zhikuRich.source(text);  // the Markdown of a table, not its cells' text
    const message = el("div", null, { class: "small error-text" });
    const save = button(T.save, async () => {
      save.disabled = true; save.textContent = T.saving;
      try {
        const chunk = await api("PATCH", base + article.dataset.chunkId + "/", { content: area.value });
        window.zhikuRich.render(chunk.content, text);
        finish();
        if (window.zhikuHistory) window.zhikuHistory.edited(article, chunk);  // static/zhiku/chunk_history.js
      } catch (e) {
        message.textContent = T.failed + errorText(e);
        save.disabled = false; save.textContent = T.save;
      }
    }, "primary save");
    const cancel = button(T.cancel, () => finish(), "cancel");
    const bar = el("div", null, { class: "row", style: "margin-top:.4rem" });
    bar.append(save, cancel, message);
    function finish() { area.remove(); bar.remove(); text.hidden = false; }
    text.hidden = true;
    article.append(area, bar);
    area.focus();
  }

  document.querySelectorAll("#chunks .chunk").forEach((article) => {
    const tools = article.querySelector(".tools");
    const toggle = button(article.dataset.enabled ? T.disable : T.enable, async () => {
      toggle.disabled = true;
      try {
        const chunk = await api("PATCH", base + article.dataset.chunkId + "/", { enabled: !article.dataset.enabled });
        setEnabled(article, chunk.enabled);
      } catch (e) {
        window.alert(T.failed + errorText(e));
      }
      toggle.disabled = false;
    }, "toggle");
    tools.append(button(T.edit, () => startEdit(article), "edit"), toggle);
  });
})();
