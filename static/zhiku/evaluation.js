// Evaluation page: the KB's labelled questions (GET/POST/DELETE /api/kbs/{id}/eval-questions/) and a run
// (POST /api/kbs/{id}/evaluate/) with its metrics. Text goes in with textContent only (zhiku.el).
(function () {
  "use strict";
  const { api, errorText, el, button } = window.zhiku;
  const page = document.getElementById("evaluation-page");
  const kbId = page.dataset.kbId;
  const base = `/api/kbs/${kbId}/`;
  // Visible strings: translated by Django's JavaScript catalogue (/jsi18n/, docs/i18n.md).
  const T = {
    none: gettext("No labelled questions yet."), count: gettext("%(n)s questions"),
    relevant: gettext("Answered by: "), notFound: gettext("should be not found"), answers: gettext("Answer spans: "),
    remove: gettext("Delete"), added: gettext("Added."), running: gettext("Running…"), done: gettext("Done."),
    metric: gettext("Metric"), value: gettext("Value"),
    labels: {
      queries: gettext("Questions"), answerable: gettext("Answerable"), unanswerable: gettext("Unanswerable"),
      "recall@1": gettext("Right document first (recall@1)"), "recall@5": gettext("Within the top 5 (recall@5)"),
      "recall@10": gettext("Within the top 10 (recall@10)"), "mrr@10": "MRR@10", "ndcg@10": "nDCG@10",
      abstain_rate: gettext("Unanswerable ones answered \"not found\""),
      false_abstain_rate: gettext("Answerable ones wrongly answered \"not found\""),
    },
  };
  const split = (text) => text.split(/[,，]/).map((s) => s.trim()).filter(Boolean);

  async function load() {
    const box = document.getElementById("questions");
    const questions = await api("GET", base + "eval-questions/");
    document.getElementById("q-count").textContent = interpolate(T.count, { n: questions.length }, true);
    box.replaceChildren();
    if (!questions.length) { box.appendChild(el("p", T.none, { class: "muted" })); return; }
    const list = el("ul", null, { class: "questions" });
    questions.forEach((q) => {
      const item = el("li");
      item.appendChild(el("strong", q.text));
      item.appendChild(el("div", q.relevant.length ? T.relevant + q.relevant.join("，") : T.notFound, { class: "muted small" }));
      if (q.answers && q.answers.length) item.appendChild(el("div", T.answers + q.answers.join("，"), { class: "muted small" }));
      item.appendChild(button(T.remove, async () => {
        try { await api("DELETE", `${base}eval-questions/${q.id}/`); await load(); } catch (e) { alert(errorText(e)); }
      }, "danger"));
      list.appendChild(item);
    });
    box.appendChild(list);
  }

  document.getElementById("question-form").addEventListener("submit", async (event) => {
    event.preventDefault();
    const status = document.getElementById("q-status");
    const body = { text: document.getElementById("q-text").value.trim(),
                   relevant: split(document.getElementById("q-relevant").value),
                   answers: split(document.getElementById("q-answers").value) };
    try {
      await api("POST", base + "eval-questions/", body);
      status.textContent = T.added;
      event.target.reset();
      await load();
    } catch (e) { status.textContent = errorText(e); }
  });

  document.getElementById("run-form").addEventListener("submit", async (event) => {
    event.preventDefault();
    const status = document.getElementById("run-status");
    const metrics = document.getElementById("metrics");
    status.textContent = T.running;
    metrics.replaceChildren();
    try {
      const result = await api("POST", base + "evaluate/", {
        mode: document.getElementById("run-mode").value,
        top_k: parseInt(document.getElementById("run-top-k").value, 10),
      });
      const table = el("table", null, { id: "metrics-table" });
      const head = el("tr");
      head.appendChild(el("th", T.metric)); head.appendChild(el("th", T.value, { class: "num" }));
      table.appendChild(head);
      Object.entries(T.labels).forEach(([key, label]) => {
        if (result[key] === undefined) return;
        const tr = el("tr");
        const v = result[key];
        tr.appendChild(el("td", label));
        const count = ["queries", "answerable", "unanswerable"].includes(key);
        tr.appendChild(el("td", v === null ? "—" : (count ? String(v) : v.toFixed(3)), { class: "num" }));
        table.appendChild(tr);
      });
      metrics.appendChild(table);
      status.textContent = T.done;
    } catch (e) { status.textContent = errorText(e); }
  });

  load().catch((e) => { document.getElementById("questions").textContent = errorText(e); });
})();
