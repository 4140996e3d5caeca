// Evaluation page: the KB's labelled questions (GET/POST/DELETE /api/kbs/{id}/eval-questions/) and a run
// (POST /api/kbs/{id}/evaluate/) with its metrics. Text goes in with textContent only (zhiku.el).
(function () {
  "use strict";
  const { api, errorText, el, button } = window.zhiku;
  const { badge, outcomes } = window.zhikuVerdict;
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
    // The answer-level figures (chat.evaluation, docs/chat.md "Evaluating answers"): [key, label, kind].
    answerRows: [
      ["questions", gettext("Questions asked as chat turns"), "count"],
      ["with_answers", gettext("Answerable questions with answer spans"), "count"],
      ["answered", gettext("… of them given an answer (answered or uncertain)"), "count"],
      ["answer_contains", gettext("Answer holds an expected span in its first 200 characters"), "share"],
      ["answer_contains_full", gettext("Answer holds an expected span anywhere"), "share"],
      ["answer_contains_answered", gettext("Answered (not uncertain) and holding a span in the first 200 characters"), "share"],
      ["answer_contains_given", gettext("Among the answers given, the span in the first 200 characters"), "share"],
      ["answer_precision_answered", gettext("Among answered ones, the span in the first 200 characters"), "share"],
      ["citation_precision", gettext("Citations whose passage holds an expected span"), "share"],
      ["not_found_rate_answerable", gettext("Answerable questions answered \"not found\""), "share"],
      ["not_found_rate_unanswerable", gettext("Unanswerable questions answered \"not found\""), "share"],
      ["answer_chars_p50", gettext("Median answer length (characters)"), "number"],
      ["first_token_ms_p50", gettext("Median time to the first words (ms)"), "number"],
      ["errors", gettext("Turns that failed"), "count"],
    ],
    answersTitle: gettext("Answers"),
    answersSummary: gettext("%(contains)s of the answerable questions with answer spans got an answer holding one; %(precision)s of the citations point at a passage that holds one; %(nf_answerable)s of the answerable questions and %(nf_unanswerable)s of the unanswerable ones were answered \"not found\"."),
    noSpans: gettext("No answerable question carries answer spans yet, so the answers' text is not scored: add spans to the questions."),
    perQuestion: gettext("Question"), holds: gettext("Holds a span"), answer: gettext("Answer (first 200 characters)"),
    verdict: gettext("Verdict"),
    verdictsTitle: gettext("Outcomes"),
    verdictsHelp: gettext("Each question ends answered, uncertain (the best passages, said to maybe not answer it) or not found. Answerable questions should be answered; unanswerable ones should be not found."),
    answerVerdictsHelp: gettext("The same outcomes for the chat turns, after the language model (if any) read the uncertain ones."),
    answerableQuestions: (n) => interpolate(ngettext("Answerable (%(n)s question)", "Answerable (%(n)s questions)", n), { n }, true),
    unanswerableQuestions: (n) => interpolate(ngettext("Unanswerable (%(n)s question)", "Unanswerable (%(n)s questions)", n), { n }, true),
    yes: gettext("yes"), no: gettext("no"), notFoundAnswer: gettext("“not found”"),
  };
  let questionText = {};
  let questionSpans = {};
  const percent = (v) => (v === null || v === undefined ? "—" : `${Math.round(v * 100)}%`);

  // The three outcomes of answerable and of unanswerable questions ({answered, uncertain, not_found} shares), as bars.
  function verdictsPart(verdicts, counts, help, id) {
    const box = el("div", null, { id, class: "verdicts" });
    box.appendChild(el("h3", T.verdictsTitle));
    box.appendChild(el("p", help, { class: "muted small" }));
    const table = el("table", null, { class: "outcomes-table" });
    [["answerable", T.answerableQuestions], ["unanswerable", T.unanswerableQuestions]].forEach(([kind, words]) => {
      if (!counts[kind]) return;
      const tr = el("tr", null, { "data-kind": kind });
      const cell = el("td");
      cell.appendChild(outcomes((verdicts || {})[kind]));
      tr.append(el("th", words(counts[kind])), cell);
      table.appendChild(tr);
    });
    box.appendChild(table);
    return box;
  }

  // The answer-level part of a run, in words: a sentence, the figures, and each question's answer.
  function answerPart(a) {
    const box = el("div", null, { id: "answers-result" });
    box.appendChild(el("h3", T.answersTitle));
    box.appendChild(el("p", a.with_answers ? interpolate(T.answersSummary, {
      contains: percent(a.answer_contains), precision: percent(a.citation_precision),
      nf_answerable: percent(a.not_found_rate_answerable), nf_unanswerable: percent(a.not_found_rate_unanswerable),
    }, true) : T.noSpans, { id: "answers-summary" }));
    const table = el("table", null, { id: "answers-table" });
    T.answerRows.forEach(([key, label, kind]) => {
      if (a[key] === undefined) return;
      const v = a[key];
      const tr = el("tr", null, { "data-key": key });
      tr.appendChild(el("td", label));
      tr.appendChild(el("td", v === null ? "—" : kind === "share" ? percent(v) : String(v), { class: "num" }));
      table.appendChild(tr);
    });
    box.appendChild(table);
    if (a.verdicts) box.appendChild(verdictsPart(a.verdicts, a, T.answerVerdictsHelp, "answer-verdicts"));
    const rows = el("table", null, { id: "answers-per-question" });
    const head = el("tr");
    [T.perQuestion, T.holds, T.verdict, T.answer].forEach((h) => head.appendChild(el("th", h)));
    rows.appendChild(head);
    (a.per_query || []).forEach((r) => {
      const tr = el("tr", null, { "data-question-id": r.id });
      tr.appendChild(el("td", questionText[r.id] || r.id));
      tr.appendChild(el("td", questionSpans[r.id] === false ? "—" : r.contains ? T.yes : T.no, { class: "nowrap" }));
      const verdictCell = el("td", null, { class: "nowrap verdict-cell" });
      const mark = badge(r.verdict);
      if (mark) verdictCell.appendChild(mark);
      tr.appendChild(verdictCell);
      // The answer as the chat page draws it, its tables as tables (static/zhiku/richtext.js markdown()).
      const answer = el("td", null, { class: "text small answer" });
      window.zhikuRich.markdown(r.hit ? r.answer : T.notFoundAnswer + (r.answer ? " " + r.answer : ""), answer);
      tr.appendChild(answer);
      rows.appendChild(tr);
    });
    const scroller = el("div", null, { class: "scroll-x" });
    scroller.appendChild(rows);
    box.appendChild(scroller);
    return box;
  }
  const split = (text) => text.split(/[,，]/).map((s) => s.trim()).filter(Boolean);

  async function load() {
    const box = document.getElementById("questions");
    const questions = await api("GET", base + "eval-questions/");
    questionText = Object.fromEntries(questions.map((q) => [String(q.id), q.text]));
    questionSpans = Object.fromEntries(questions.map((q) => [String(q.id), (q.answers || []).length > 0]));
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
    document.getElementById("answer-metrics").replaceChildren();
    try {
      const result = await api("POST", base + "evaluate/", {
        mode: document.getElementById("run-mode").value,
        top_k: parseInt(document.getElementById("run-top-k").value, 10),
        answers: document.getElementById("run-answers").checked,
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
      if (result.verdicts) metrics.appendChild(verdictsPart(result.verdicts, result, T.verdictsHelp, "search-verdicts"));
      if (result.answers) document.getElementById("answer-metrics").appendChild(answerPart(result.answers));
      status.textContent = T.done;
    } catch (e) { status.textContent = errorText(e); }
  });

  load().catch((e) => { document.getElementById("questions").textContent = errorText(e); });
})();
