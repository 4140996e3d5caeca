// The KB page (owners): a drop in the golden questions' answer rate (GET /api/kbs/{id}/health/golden/), with the
// change that came before it and a link to the health page. Text goes in with textContent only (zhiku.el).
(function () {
  "use strict";
  const box = document.getElementById("golden-drop");
  if (!box) return;
  const { api, el, formatTime } = window.zhiku;
  const kbId = box.dataset.kbId;
  const T = {
    drop: gettext("The golden questions' answer rate fell from %(before)s to %(after)s (%(answered)s of %(questions)s answered) on %(when)s."),
    change: gettext("The change before it: document %(document)s, version %(version)s."),
    see: gettext("See the health page"),
  };
  api("GET", `/api/kbs/${kbId}/health/golden/`).then((data) => {
    const run = data.latest;
    if (!run || !run.dropped) return;
    box.replaceChildren(el("p", interpolate(T.drop, {
      before: Math.round(run.previous_rate * 100) + "%", after: Math.round(run.rate * 100) + "%", answered: run.answered,
      questions: run.questions, when: formatTime(run.created_at),
    }, true)));
    if (run.document_id) {
      const change = el("p", interpolate(T.change, { document: run.document_id, version: run.document_version }, true), { class: "small" });
      box.appendChild(change);
    }
    box.appendChild(el("a", T.see, { href: `/kbs/${kbId}/health/` }));
    box.hidden = false;
  }).catch(() => {});
})();
