// The document page, for editors: restore and revert ask first, in the page's own <dialog id="confirm-dialog">
// (templates/knowledge/document.html), saying what will happen. zhikuConfirm(kind, values) resolves true only for
// the dialog's OK button; Cancel, Esc and closing it resolve false and nothing is sent.
(function () {
  "use strict";
  const dialog = document.getElementById("confirm-dialog");
  if (!dialog) return;
  const W = dialog.dataset;  // the words, translated by the template, with {n}, {next}, {current} to fill in
  const fill = (text, values) => text.replace(/\{(\w+)\}/g, (_, k) => String(values[k]));
  const words = (kind, part) => W[kind + part];

  // kind: "restore" or "revert" (the data-<kind>, data-<kind>-title and data-<kind>-ok words).
  function zhikuConfirm(kind, values) {
    dialog.querySelector("#confirm-dialog-title").textContent = fill(words(kind, "Title"), values);
    dialog.querySelector(".confirm-text").textContent = fill(words(kind, ""), values);
    dialog.querySelector(".confirm-ok").textContent = fill(words(kind, "Ok"), values);
    dialog.dataset.kind = kind;
    dialog.returnValue = "";
    return new Promise((resolve) => {
      dialog.addEventListener("close", () => resolve(dialog.returnValue === "ok"), { once: true });
      dialog.showModal();
      dialog.querySelector(".confirm-cancel").focus();  // Enter on a stray keypress cancels rather than acts
    });
  }

  window.zhikuConfirm = zhikuConfirm;
})();
