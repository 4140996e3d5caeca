// Review queue (editors and owners): the KB's labels by status (GET /api/kbs/{id}/labels/?status=…), each with its
// question, where it came from, who made it and its passages; a pending one confirmed or rejected
// (POST …/labels/{label}/confirm/ or …/reject/). Text goes in with textContent only (zhiku.el).
(function () {
  "use strict";
  const { api, errorText, el, button, formatTime } = window.zhiku;
  const page = document.getElementById("labels-page");
  const base = `/api/kbs/${page.dataset.kbId}/labels/`;
  // Visible strings: translated by Django's JavaScript catalogue (/jsi18n/, docs/i18n.md).
  const T = {
    loading: gettext("Loading…"), none: gettext("Nothing here."),
    count: (n) => interpolate(ngettext("%(n)s label", "%(n)s labels", n), { n }, true),
    question: gettext("Question"), passage: gettext("Passage"), from: gettext("From"), by: gettext("By"),
    actions: gettext("Review"), confirm: gettext("Confirm"), reject: gettext("Reject"),
    confirmed: gettext("Confirmed."), rejected: gettext("Rejected."), failed: gettext("Failed: "),
    answers: gettext("answers it"), wrong: gettext("wrong passage"),
    sources: {
      manual: gettext("typed in"), import: gettext("imported"), health: gettext("health page"),
      hit_test: gettext("hit testing"), feedback_up: gettext("👍 on an answer"), feedback_down: gettext("👎 wrong passage"),
    },
  };
  let current = "pending";
  const status = document.getElementById("labels-status");
  const box = document.getElementById("labels");

  function passages(label) {
    const cell = el("td", null, { class: "text" });
    (label.passages || []).forEach((p) => {
      const item = el("div", null, { class: "label-passage" + (p.wrong ? " wrong" : ""), "data-chunk-id": String(p.chunk_id) });
      item.append(el("span", p.wrong ? T.wrong : T.answers, { class: "badge " + (p.wrong ? "status-failed" : "status-ready") }), " ",
        el("strong", p.title || "#" + p.chunk_id),
        window.zhikuRich.render(p.content, el("div", null, { class: "small passage-text" })));  // its tables drawn
      cell.appendChild(item);
    });
    if (!cell.childNodes.length) cell.textContent = "—";
    return cell;
  }

  function row(label) {
    const tr = el("tr", null, { "data-label-id": String(label.id) });
    tr.append(el("td", label.text), passages(label), el("td", T.sources[label.source] || label.source),
      el("td", [label.created_by || "—", formatTime(label.created_at)].filter(Boolean).join(" · "), { class: "small" }));
    const actions = el("td", null, { class: "nowrap" });
    if (label.status !== "confirmed") actions.appendChild(button(T.confirm, () => review(label, "confirm", tr), "primary"));
    if (label.status !== "rejected") actions.append(" ", button(T.reject, () => review(label, "reject", tr)));
    tr.appendChild(actions);
    return tr;
  }

  async function review(label, verb, tr) {
    try {
      await api("POST", `${base}${label.id}/${verb}/`);
      tr.remove();
      status.className = "small";
      status.textContent = verb === "confirm" ? T.confirmed : T.rejected;
    } catch (e) {
      status.className = "small error-text";
      status.textContent = T.failed + errorText(e);
    }
  }

  async function load() {
    status.className = "muted small";
    status.textContent = T.loading;
    box.replaceChildren();
    try {
      const data = await api("GET", `${base}?status=${current}&page_size=100`);
      status.textContent = data.results.length ? T.count(data.count) : T.none;
      if (!data.results.length) return;
      const table = el("table", null, { id: "labels-table" });
      const head = el("tr");
      [T.question, T.passage, T.from, T.by, T.actions].forEach((h) => head.appendChild(el("th", h)));
      table.appendChild(head);
      data.results.forEach((label) => table.appendChild(row(label)));
      box.appendChild(table);
    } catch (e) {
      status.className = "small error-text";
      status.textContent = T.failed + errorText(e);
    }
  }

  document.querySelectorAll(".tab[data-status]").forEach((tab) => tab.addEventListener("click", () => {
    current = tab.dataset.status;
    document.querySelectorAll(".tab[data-status]").forEach((t) => t.setAttribute("aria-selected", String(t === tab)));
    load();
  }));
  load();
})();
