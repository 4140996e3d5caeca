// The document page, for everyone who may read it: a chunk's history (GET …/chunks/<id>/revisions/), each change
// shown as a diff computed by the server (runs kept, deleted <del>, inserted <ins>), and for editors a revert
// (POST …/revisions/<n>/revert/: the text before change n, re-embedded at once). Text goes in with textContent only.
(function () {
  "use strict";
  const { api, errorText, el, button, formatTime } = window.zhiku;
  const root = document.getElementById("document-page");
  if (!root) return;
  const W = document.getElementById("history-words").dataset;  // the words, translated by the template
  const canEdit = Boolean(root.dataset.canEdit);
  const base = `/api/kbs/${root.dataset.kbId}/documents/${root.dataset.documentId}/chunks/`;
  const fill = (text, values) => text.replace(/\{(\w+)\}/g, (_, k) => String(values[k]));  // "{n}" in the words

  function diffView(runs) {
    const box = el("div", null, { class: "diff" });
    for (const run of runs) {
      box.append(run.op === "equal" ? document.createTextNode(run.text) : el(run.op === "insert" ? "ins" : "del", run.text));
    }
    return box;
  }

  // next: the number the revert's own change gets (the changes are numbered 1, 2, 3…: one past their count).
  function revisionView(article, revision, panel, next) {
    const item = el("div", null, { class: `revision kind-${revision.kind}`, "data-number": revision.number });
    const who = el("div", null, { class: "who" });
    who.append(el("span", "#" + revision.number, { class: "number" }), el("span", revision.kind_label, { class: "badge" }),
      el("span", revision.user_name || revision.user || W.platform, { class: "user" }),
      el("span", formatTime(revision.created_at), { class: "when" }));
    if (revision.document_version) who.append(el("span", fill(W.version, { v: revision.document_version })));
    if (revision.reverts) who.append(el("span", fill(W.reverts, { n: revision.reverts })));
    item.append(who);
    const changed = revision.diff.some((run) => run.op !== "equal");
    item.append(changed ? diffView(revision.diff) : el("p", revision.kind === "pin" ? W.pinned : W.same, { class: "muted small" }));
    if (canEdit && revision.kind !== "create" && changed) {
      const status = el("span", null, { class: "small", "aria-live": "polite" });
      const revert = button(W.revert, async () => {
        // It asks first, saying what will happen (static/zhiku/confirm.js); cancelled, nothing is sent.
        if (!(await window.zhikuConfirm("revert", { n: revision.number, next }))) return;
        revert.disabled = true;
        status.className = "small muted"; status.textContent = W.reverting;
        try {
          const chunk = await api("POST", `${base}${article.dataset.chunkId}/revisions/${revision.number}/revert/`);
          window.zhikuRich.render(chunk.content, article.querySelector(".text"));
          markEdited(article, Boolean(chunk.metadata && chunk.metadata.edited));
          await show(article, panel);
          const done = panel.querySelector(".revert-done");
          done.textContent = W.reverted; done.hidden = false;
        } catch (e) {
          status.className = "small error-text"; status.textContent = W.failed + errorText(e);
          revert.disabled = false;
        }
      }, "revert");
      const row = el("div", null, { class: "row" });
      row.append(revert, status);
      item.append(row);
    }
    return item;
  }

  function markEdited(article, edited) {
    let badge = article.querySelector(".badge.edited");
    if (edited && !badge) {
      badge = el("span", W.edited, { class: "badge edited" });
      article.querySelector(".meta .history").before(badge);
    } else if (!edited && badge) {
      badge.remove();
    }
  }

  async function show(article, panel) {
    panel.replaceChildren(el("p", W.loading, { class: "muted small" }));
    const head = el("h3", W.title);
    head.append(button(W.close, () => toggle(article), "close"));
    try {
      const page = await api("GET", `${base}${article.dataset.chunkId}/revisions/?page_size=100`);
      const list = el("div", null, { class: "revisions" });
      const next = Math.max(page.count, ...page.results.map((r) => r.number)) + 1;
      for (const revision of page.results) list.append(revisionView(article, revision, panel, next));
      if (!page.results.length) list.append(el("p", W.empty, { class: "muted small" }));
      panel.replaceChildren(head, el("p", null, { class: "small ok-text revert-done", hidden: "" }), list);
    } catch (e) {
      panel.replaceChildren(head, el("p", W.failed + errorText(e), { class: "small error-text" }));
    }
  }

  function toggle(article) {
    const control = article.querySelector(".meta .history");
    let panel = article.querySelector(".chunk-history");
    if (panel) {
      panel.remove();
      control.setAttribute("aria-expanded", "false");
      return;
    }
    panel = el("section", null, { class: "chunk-history" });
    article.append(panel);
    control.setAttribute("aria-expanded", "true");
    show(article, panel);
  }

  function bind(control) {
    control.addEventListener("click", () => toggle(control.closest(".chunk")));
  }

  // After an edit on this page (static/zhiku/document.js): the chunk has a history now, and may be marked edited.
  function edited(article, chunk) {
    if (!article.querySelector(".meta .history")) {
      const control = el("button", W.history, { type: "button", class: "history link", "aria-expanded": "false" });
      article.querySelector(".meta .state").before(control);
      bind(control);
    }
    markEdited(article, Boolean(chunk.metadata && chunk.metadata.edited));
    const panel = article.querySelector(".chunk-history");
    if (panel) show(article, panel);
  }

  document.querySelectorAll("#chunks .chunk .meta .history").forEach(bind);
  window.zhikuHistory = { edited };
})();
