// The document page, for editors: edit a chunk's text (PATCH re-embeds it) and switch it on or off.
(function () {
  "use strict";
  const { api, errorText, el, button } = window.zhiku;
  // Visible strings: translated by Django's JavaScript catalogue (/jsi18n/, docs/i18n.md).
  const T = {
    edit: gettext("Edit"), save: gettext("Save"), cancel: gettext("Cancel"), saving: gettext("Saving…"),
    disable: gettext("Disable"), enable: gettext("Enable"), disabled: gettext("Disabled"),
    failed: gettext("Saving failed: "),
  };
  const root = document.getElementById("document-page");
  const base = `/api/kbs/${root.dataset.kbId}/chunks/`;

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
    area.value = text.textContent;
    const message = el("div", null, { class: "small error-text" });
    const save = button(T.save, async () => {
      save.disabled = true; save.textContent = T.saving;
      try {
        const chunk = await api("PATCH", base + article.dataset.chunkId + "/", { content: area.value });
        text.textContent = chunk.content;
        finish();
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
