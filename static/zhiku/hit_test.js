// Hit-testing page: POST /api/search/ with debug. The verdict and the KB's two lines in a sentence, the results
// numbered in the order shown, and every stage's figures behind a toggle (<details>), lists as tables. Text is set
// with textContent only (chunk texts through zhikuRich, static/zhiku/richtext.js), so nothing from documents or
// queries is ever parsed as HTML.
(function () {
  "use strict";
  const form = document.getElementById("hit-form");
  // The CSRF token as the cookie holds it when the request is sent (a token read at load can be stale by then).
  const csrf = () => (document.cookie.match(/(?:^|;\s*)csrftoken=([^;]+)/) || [])[1]
    || form.querySelector("input[name=csrfmiddlewaretoken]").value;
  const { badge, words } = window.zhikuVerdict;
  // Visible strings: translated by Django's JavaScript catalogue (/jsi18n/, docs/i18n.md).
  const fmt = (text, values) => interpolate(text, values, true);
  const T = {
    searching: gettext("Searching…"), error: gettext("Error: "),
    results: (n) => fmt(ngettext("%(n)s result, in the order the answer would use them", "%(n)s results, in the order the answer would use them", n), { n }),
    noResults: gettext("No passage was found."),
    verdict: (relevance, verdict, gate, line) => fmt(gettext("relevance %(relevance)s: %(verdict)s — not-found gate %(gate)s, confidence line %(line)s"),
      { relevance, verdict, gate, line }),
    meaning: {
      answered: gettext("At or above the confidence line: the chat answers from these passages."),
      uncertain: gettext("Between the two lines: the chat shows the best passages with a statement that they may not answer the question (with a language model, the model reads them and decides)."),
      not_found: gettext("Below the not-found gate: the chat answers with the knowledge base's not-found text:"),
    },
    run: (mode, reranker) => fmt(gettext("mode %(mode)s · reranker %(reranker)s"), { mode, reranker }),
    noKeyword: gettext("keyword path unavailable"), timings: gettext("timings (ms): "),
    yes: gettext("yes"), no: gettext("no"),
  };
  // The results table: a header in words per column; "#" is the row's place in the list shown.
  const RESULT_COLUMNS = [
    ["#", "#"], ["document.source_name", gettext("Document")], ["section_path", gettext("Section")],
    ["content", gettext("Text")], ["scores.relevance", gettext("Relevance")],
    ["scores.vector_similarity", gettext("Cosine")], ["scores.vector_rank", gettext("Vector rank")],
    ["scores.bm25_score", "BM25"], ["scores.bm25_rank", gettext("Keyword rank")],
    ["scores.fused_score", gettext("Fused score")], ["scores.fused_rank", gettext("Fusion rank")],
    ["scores.rerank_score", gettext("Rerank score")],
  ];
  // Stage details: the debug fields in words where they have some (others show their own name).
  const LABELS = {
    query: gettext("Query"), mode: gettext("Mode"), kbs: gettext("Each knowledge base's paths"),
    tokens: gettext("Query words"), keyword_tokens: gettext("Keyword path words"),
    low_score_retry: gettext("Retried with looser words"), weights: gettext("Fusion weights"), fusion: gettext("Fusion"),
    vector: gettext("Vector path"), keyword: gettext("Keyword path"), fused: gettext("Fused candidates"),
    pool: gettext("Candidates judged (chunk ids)"), dropped_at_load: gettext("Dropped when loaded (chunk ids)"),
    merged: gettext("Merged candidates"), duplicates: gettext("Duplicates (chunk ids)"), rescued: gettext("Rescued (chunk ids)"),
    judge: gettext("Judge"), final: gettext("Final results"), signals: gettext("Signals"), by_kb: gettext("Relevance by knowledge base"),
    chunk_id: gettext("Chunk"), kb_id: gettext("Knowledge base"), document_id: gettext("Document"),
    similarity: gettext("Cosine"), rank: gettext("Rank"), bm25: "BM25", vector_similarity: gettext("Cosine"),
    vector_rank: gettext("Vector rank"), bm25_score: "BM25", bm25_rank: gettext("Keyword rank"),
    fused_score: gettext("Fused score"), fused_rank: gettext("Fusion rank"), rerank_score: gettext("Rerank score"),
    final_score: gettext("Final score"), relevance: gettext("Relevance"), threshold: gettext("Not-found gate"),
    answer_threshold: gettext("Confidence line"), verdict: gettext("Verdict"), hit: gettext("Hit"),
    calibration: gettext("Calibration (slope, offset)"), model: gettext("Judge model"),
    result: gettext("Result #"), learned: gettext("Learned from labels"), action: gettext("Action"),
    label_id: gettext("Label"), question: gettext("Labelled question"), cosine: gettext("Cosine"),
  };
  const L = {
    answers: gettext("Answers this question"), wrong: gettext("Wrong passage"),
    answersHelp: gettext("Label this passage as answering the question tested (a confirmed label)"),
    wrongHelp: gettext("Label this passage as not answering the question tested (ranked last for it when the knowledge base learns)"),
    labelled: gettext("Labelled"), labelledWrong: gettext("Labelled wrong"), column: gettext("Label"),
  };
  const canLabel = form.dataset.canLabel === "1";
  // Already labelled for this question (templates/knowledge/hit_test.html's data-labelled-*, Django's catalogue).
  const MARK = { answers: form.dataset.labelledAnswers, wrong: form.dataset.labelledWrong, help: form.dataset.labelledHelp };
  const kbId = () => document.getElementById("kb-id").value;
  // A label cell: what this passage is labelled for the question (a badge in words), then the buttons that label it
  // otherwise; "answers" / "wrong" for a labelled passage, null for one not labelled yet.
  function labelCell(td, row, query, state) {
    const say = (wrong) => async () => {
      td.querySelectorAll("button").forEach((b) => { b.disabled = true; });
      try {
        const response = await fetch(`/api/kbs/${kbId()}/labels/`, {
          method: "POST", credentials: "same-origin",
          headers: { "Content-Type": "application/json", "X-CSRFToken": csrf() },
          body: JSON.stringify({ question: query, chunk_id: row.chunk_id, wrong }),
        });
        const data = await response.json();
        if (!response.ok) throw new Error(data.error ? data.error.message : String(response.status));
        labelCell(td, row, query, wrong ? "wrong" : "answers");
      } catch (e) {
        td.querySelectorAll("button").forEach((b) => { b.disabled = false; });
        td.appendChild(el("span", T.error + e.message, { class: "small error-text" }));
      }
    };
    const tr = td.parentNode;
    if (tr) markRow(tr, state);
    td.replaceChildren();
    if (state) {
      td.append(el("span", state === "wrong" ? L.labelledWrong : L.labelled,
        { class: "badge labelled-short " + (state === "wrong" ? "status-failed" : "status-ready") }), " ");
    }
    if (state !== "answers") {
      const yes = el("button", L.answers, { type: "button", class: "label-answers", title: L.answersHelp });
      yes.addEventListener("click", say(false));
      td.append(yes, " ");
    }
    if (state !== "wrong") {
      const no = el("button", L.wrong, { type: "button", class: "label-wrong", title: L.wrongHelp });
      no.addEventListener("click", say(true));
      td.append(no);
    }
    return td;
  }
  // The mark in words above the passage's text, where it is read without scrolling the wide table sideways.
  function markRow(tr, state) {
    tr.classList.remove("labelled-answers", "labelled-wrong");
    tr.querySelectorAll(".labelled-mark").forEach((m) => m.remove());
    if (!state) { delete tr.dataset.labelled; return; }
    tr.classList.add("labelled-" + state);
    tr.dataset.labelled = state;
    const mark = el("div", null, { class: "labelled-mark-line" });
    mark.appendChild(el("span", state === "wrong" ? MARK.wrong : MARK.answers,
      { class: "badge labelled-mark " + (state === "wrong" ? "status-failed" : "status-ready"), title: MARK.help }));
    const text = tr.querySelector("td.text");
    if (text) text.prepend(mark);
  }
  // "This passage answers this question" (or not): a confirmed label of the KB (POST /api/kbs/{id}/labels/).
  function labelButtons(row, query) {
    return labelCell(el("td", null, { class: "nowrap label-cell" }), row, query, null);
  }
  // The passages already labelled for this question (the same once spaces, case and trailing punctuation are set
  // aside: GET …/labels/?status=confirmed&question=), marked in their rows; the newest label wins for a passage.
  async function markLabelled(table, query) {
    const params = new URLSearchParams({ status: "confirmed", question: query, page_size: "100" });
    const response = await fetch(`/api/kbs/${kbId()}/labels/?${params}`, { credentials: "same-origin" });
    const data = await response.json();
    if (!response.ok) throw new Error(data.error ? data.error.message : String(response.status));
    const states = new Map();
    data.results.forEach((label) => {
      label.chunk_ids.forEach((id) => { if (!states.has(id)) states.set(id, "answers"); });
      label.negative_chunk_ids.forEach((id) => { if (!states.has(id)) states.set(id, "wrong"); });
    });
    table.querySelectorAll("tr[data-chunk-id]").forEach((tr) => {
      const state = states.get(parseInt(tr.dataset.chunkId, 10));
      const td = tr.querySelector(".label-cell");
      // A passage labelled meanwhile on this page keeps what was just done.
      if (state && td && !tr.dataset.labelled) labelCell(td, { chunk_id: parseInt(tr.dataset.chunkId, 10) }, query, state);
    });
  }
  // The stages' and signals' names in words, each with a line saying what it is (static/zhiku/hit_terms.js).
  const terms = window.zhikuHitTerms;
  const label = (key) => LABELS[key] || terms.word(key) || key;
  const titled = (key) => (terms.help(key) ? { title: terms.help(key) } : undefined);
  terms.glossary(document.getElementById("glossary-list"));

  function el(tag, text, attrs) {
    const node = document.createElement(tag);
    if (text !== undefined && text !== null) node.textContent = String(text);
    if (attrs) for (const [k, v] of Object.entries(attrs)) node.setAttribute(k, v);
    return node;
  }
  function fmtValue(v) {
    if (v === null || v === undefined) return "—";
    if (typeof v === "boolean") return v ? T.yes : T.no;
    if (typeof v === "number") return Number.isInteger(v) ? String(v) : v.toFixed(4);
    if (Array.isArray(v)) return v.length ? v.map(fmtValue).join(" · ") : "—";
    if (typeof v === "object") return Object.entries(v).map(([k, x]) => `${label(k)} ${fmtValue(x)}`).join(" · ");
    return String(v);
  }
  const fix2 = (v) => (typeof v === "number" ? v.toFixed(2) : "—");
  const pick = (row, path) => path.split(".").reduce((v, part) => (v == null ? undefined : v[part]), row);
  const isRecord = (v) => v !== null && typeof v === "object" && !Array.isArray(v);
  const scroller = (child) => { const box = el("div", null, { class: "scroll-x" }); box.appendChild(child); return box; };

  // The results, numbered 1, 2, … as shown; the section path on one line; chunk texts with their tables.
  function resultsTable(rows, data, query) {
    const t = el("table", null, { id: "results-table" });
    const head = el("tr");
    RESULT_COLUMNS.forEach(([path, header]) => head.appendChild(el("th", header, path === "#" ? { class: "num" } : undefined)));
    if (canLabel) head.appendChild(el("th", L.column));
    t.appendChild(head);
    rows.forEach((row, index) => {
      const tr = el("tr", null, { "data-chunk-id": String(row.chunk_id) });
      RESULT_COLUMNS.forEach(([path]) => {
        let td;
        if (path === "#") {
          td = el("td", index + 1, { class: "num row-number" });
        } else if (path === "content") {
          td = el("td", null, { class: "text" });
          window.zhikuRich.render(row.content, td);
        } else if (path === "section_path") {
          td = el("td", (row.section_path || []).join(" › ") || "—", { class: "section" });
        } else if (path === "document.source_name") {
          td = el("td", row.document.title || row.document.source_name, { class: "doc", title: row.document.source_name });
        } else {
          const v = pick(row, path);
          td = el("td", fmtValue(v), { class: "num" });
          if (path === "scores.relevance" && typeof v === "number") {
            // Which side of the two lines this passage's own relevance falls on.
            const side = v < data.threshold ? "not_found" : v >= data.answer_threshold ? "answered" : "uncertain";
            td.classList.add("rel-" + side);
            td.title = words(side);
          }
        }
        tr.appendChild(td);
      });
      if (canLabel) tr.appendChild(labelButtons(row, query));
      t.appendChild(tr);
    });
    return t;
  }

  // One stage's value: a list of records is a table (nested records' fields as their own columns), a record of
  // plain values a two-column table, a record of records a section each; plain lists and values read inline.
  function stageTable(rows, numbers) {
    const columns = [];
    rows.forEach((r) => Object.entries(r).forEach(([k, v]) => {
      if (isRecord(v)) Object.keys(v).forEach((sub) => { if (!columns.some((c) => c[0] === k && c[1] === sub)) columns.push([k, sub]); });
      else if (!columns.some((c) => c[0] === k && c[1] === null)) columns.push([k, null]);
    }));
    const withResult = numbers && rows.some((r) => numbers.has(r.chunk_id));
    const t = el("table", null, { class: "stage-table" });
    const head = el("tr");
    if (withResult) head.appendChild(el("th", label("result"), { class: "num" }));
    columns.forEach(([k, sub]) => head.appendChild(el("th", label(sub === null ? k : sub),
      sub === null ? titled(k) : { title: terms.help(sub) || label(k) })));
    t.appendChild(head);
    rows.forEach((r) => {
      const tr = el("tr");
      if (withResult) tr.appendChild(el("td", numbers.has(r.chunk_id) ? numbers.get(r.chunk_id) : "", { class: "num" }));
      columns.forEach(([k, sub]) => {
        const v = sub === null ? r[k] : (isRecord(r[k]) ? r[k][sub] : undefined);
        tr.appendChild(el("td", fmtValue(v), { class: typeof v === "number" ? "num" : "" }));
      });
      t.appendChild(tr);
    });
    return t;
  }
  function renderStage(key, value, container, depth, numbers) {
    const heading = el(depth ? "h4" : "h3", label(key), titled(key));
    if (Array.isArray(value) && value.length && value.every(isRecord)) {
      container.append(heading, scroller(stageTable(value, numbers)));
    } else if (isRecord(value) && Object.values(value).some((v) => isRecord(v) || (Array.isArray(v) && v.some(isRecord)))) {
      const box = el("div", null, { class: "stage" });
      box.appendChild(heading);
      const plain = Object.entries(value).filter(([, v]) => !isRecord(v) && !(Array.isArray(v) && v.some(isRecord)));
      if (plain.length) box.appendChild(keyValues(plain));
      Object.entries(value).filter(([k]) => !plain.some(([p]) => p === k))
        .forEach(([k, v]) => renderStage(key === "kbs" ? fmt(gettext("Knowledge base %(id)s"), { id: k }) : k, v, box, depth + 1, numbers));
      container.appendChild(box);
    } else if (isRecord(value)) {
      container.append(heading, keyValues(Object.entries(value)));
    } else {
      return [key, value];
    }
    return null;
  }
  function keyValues(entries) {
    const t = el("table", null, { class: "stage-table key-values" });
    entries.forEach(([k, v]) => {
      const tr = el("tr");
      tr.append(el("th", label(k), titled(k)), el("td", fmtValue(v), { class: typeof v === "number" ? "num" : "" }));
      t.appendChild(tr);
    });
    return t;
  }
  function renderStages(debug, container, numbers) {
    const plain = [];
    Object.entries(debug || {}).forEach(([key, value]) => {
      const rest = renderStage(key, value, container, 0, numbers);
      if (rest) plain.push(rest);
    });
    if (plain.length) container.prepend(keyValues(plain));
  }

  function showVerdict(box, data) {
    const verdict = data.verdict || (data.hit ? "answered" : "not_found");
    box.className = "card verdict-card verdict-" + verdict;
    const line = el("p", null, { class: "verdict-line" });
    line.append(badge(verdict), " ",
      el("strong", T.verdict(fix2(data.relevance), words(verdict), fix2(data.threshold), fix2(data.answer_threshold)), { id: "verdict-text" }));
    box.replaceChildren(line, el("p", T.meaning[verdict], { class: "small" }));
    if (verdict === "not_found" && data.not_found_text) box.appendChild(el("blockquote", data.not_found_text, { class: "small" }));
    const [mode, modeHelp] = terms.mode(data.mode);
    const [reranker, rerankerHelp] = terms.rerankers(data.reranker);
    box.appendChild(el("p", T.run(mode, reranker) + (data.keyword_available ? "" : " · " + T.noKeyword),
      { class: "muted small", id: "run-line", title: [modeHelp, rerankerHelp].filter(Boolean).join(" ") }));
    if (data.reranker && data.reranker !== "none") box.appendChild(el("p", rerankerHelp, { class: "muted small", id: "reranker-help" }));
    (data.notes || []).forEach((n) => box.appendChild(el("p", n, { class: "muted small" })));
    // Each stage's time in words, its tooltip saying what the stage does.
    const timings = el("p", T.timings, { class: "muted small", id: "timings" });
    Object.entries(data.timings || {}).forEach(([k, v], i) => {
      const [word, help] = terms.stage(k);
      timings.append(i ? " · " : "", el("span", `${word} ${v}`, { "data-stage": k, title: help }));
    });
    box.appendChild(timings);
  }

  form.addEventListener("submit", async (event) => {
    event.preventDefault();
    const verdict = document.getElementById("verdict");
    const results = document.getElementById("results");
    const stages = document.getElementById("stages");
    const stagesBody = document.getElementById("stages-body");
    results.replaceChildren(); stagesBody.replaceChildren(); stages.hidden = true;
    verdict.hidden = false; verdict.className = "card"; verdict.textContent = T.searching;
    const body = {
      query: document.getElementById("query").value,
      kb_ids: [parseInt(document.getElementById("kb-id").value, 10)],
      top_k: parseInt(document.getElementById("top-k").value, 10),
      mode: document.getElementById("mode").value,
      rerank: document.getElementById("rerank").checked,
      debug: true,
    };
    let response, data;
    try {
      response = await fetch("/api/search/", {
        method: "POST", credentials: "same-origin",
        headers: { "Content-Type": "application/json", "X-CSRFToken": csrf() },
        body: JSON.stringify(body),
      });
      data = await response.json();
    } catch (e) {
      verdict.textContent = T.error + e; return;
    }
    if (!response.ok) {
      verdict.textContent = T.error + (data.error ? data.error.code + " — " + data.error.message : response.status);
      return;
    }
    showVerdict(verdict, data);
    results.appendChild(el("h2", data.results.length ? T.results(data.results.length) : T.noResults));
    if (data.results.length) {
      const table = resultsTable(data.results, data, body.query);
      results.appendChild(scroller(table));  // the wide table scrolls, not the page
      if (canLabel) {
        markLabelled(table, body.query).catch((e) => {
          results.appendChild(el("p", T.error + e.message, { class: "small error-text", id: "labelled-error" }));
        });
      }
    }
    if (data.debug) {
      const numbers = new Map(data.results.map((r, i) => [r.chunk_id, i + 1]));
      renderStages(data.debug, stagesBody, numbers);
      stages.hidden = false;
    }
  });
})();
