// Hit-testing page: POST /api/search/ with debug, render every stage. Text is set with
// textContent only, so nothing from documents or queries is ever parsed as HTML.
(function () {
  "use strict";
  const form = document.getElementById("hit-form");
  const csrf = form.querySelector("input[name=csrfmiddlewaretoken]").value;
  // Visible strings: translated by Django's JavaScript catalogue (/jsi18n/, docs/i18n.md).
  const T = {
    searching: gettext("Searching…"), error: gettext("Error: "),
    hit: gettext("Hit"), notFound: gettext("Not found"),
    results: gettext("Results"), stages: gettext("Stages"),
    verdict: gettext("relevance %(relevance)s / threshold %(threshold)s · mode %(mode)s · reranker %(reranker)s"),
    noKeyword: gettext("keyword path unavailable"), timings: gettext("timings (ms): "),
  };
  // The results table: a header in words per column, the text wide enough to read (console.css td.text).
  const RESULT_COLUMNS = [
    ["scores.fused_rank", "#"], ["document.source_name", gettext("Document")], ["section_path", gettext("Section")],
    ["content", gettext("Text")], ["scores.relevance", gettext("Relevance")],
    ["scores.vector_similarity", gettext("Cosine")], ["scores.vector_rank", gettext("Vector rank")],
    ["scores.bm25_score", "BM25"], ["scores.bm25_rank", gettext("Keyword rank")],
    ["scores.fused_score", gettext("Fused score")], ["scores.rerank_score", gettext("Rerank score")],
  ];

  function el(tag, text, attrs) {
    const node = document.createElement(tag);
    if (text !== undefined && text !== null) node.textContent = String(text);
    if (attrs) for (const [k, v] of Object.entries(attrs)) node.setAttribute(k, v);
    return node;
  }
  function fmt(v) {
    if (v === null || v === undefined) return "—";
    if (typeof v === "number") return Number.isInteger(v) ? String(v) : v.toFixed(4);
    if (Array.isArray(v)) return v.map(fmt).join(" > ");
    if (typeof v === "object") return JSON.stringify(v);
    return String(v);
  }
  // columns: field paths ("scores.relevance"), or [path, header] pairs where a header in words exists.
  function table(rows, columns) {
    const t = el("table");
    const head = el("tr");
    const cols = columns.map((c) => (Array.isArray(c) ? c : [c, c]));
    cols.forEach(([, header]) => head.appendChild(el("th", header)));
    t.appendChild(head);
    rows.forEach((row) => {
      const tr = el("tr");
      cols.forEach(([path]) => {
        let v = row;
        for (const part of path.split(".")) v = v == null ? undefined : v[part];
        const td = el("td", fmt(v));
        if (path === "content") td.className = "text";
        else if (path === "document.source_name") td.className = "nowrap";
        else if (typeof v === "number") td.className = "num";
        tr.appendChild(td);
      });
      t.appendChild(tr);
    });
    return t;
  }
  function renderStages(debug, container) {
    // debug is {key: value}; lists of objects become tables, nested objects recurse.
    Object.entries(debug || {}).forEach(([key, value]) => {
      if (Array.isArray(value) && value.length && typeof value[0] === "object") {
        container.appendChild(el("h3", key));
        const cols = Array.from(new Set(value.flatMap((r) => Object.keys(r))));
        const scroller = el("div", null, { class: "scroll-x" });
        scroller.appendChild(table(value, cols));
        container.appendChild(scroller);
      } else if (value && typeof value === "object" && !Array.isArray(value)) {
        const box = el("div", null, { class: "card" });
        box.appendChild(el("h3", key));
        renderStages(value, box);
        container.appendChild(box);
      } else {
        container.appendChild(el("p", key + ": " + fmt(value)));
      }
    });
  }

  form.addEventListener("submit", async (event) => {
    event.preventDefault();
    const verdict = document.getElementById("verdict");
    const results = document.getElementById("results");
    const stages = document.getElementById("stages");
    results.replaceChildren(); stages.replaceChildren();
    verdict.hidden = false; verdict.textContent = T.searching;
    const body = {
      query: document.getElementById("query").value,
      kb_ids: [parseInt(document.getElementById("kb-id").value, 10)],
      top_k: parseInt(document.getElementById("top-k").value, 10),
      mode: document.getElementById("mode").value,
      rerank: document.getElementById("rerank").checked,
      debug: true,
    };
    const response = await fetch("/api/search/", {
      method: "POST", credentials: "same-origin",
      headers: { "Content-Type": "application/json", "X-CSRFToken": csrf },
      body: JSON.stringify(body),
    });
    const data = await response.json();
    if (!response.ok) {
      verdict.textContent = T.error + (data.error ? data.error.code + " — " + data.error.message : response.status);
      return;
    }
    verdict.replaceChildren(
      el("strong", data.hit ? T.hit : T.notFound),
      el("span", "  " + interpolate(T.verdict, {relevance: fmt(data.relevance), threshold: fmt(data.threshold),
                                                mode: data.mode, reranker: data.reranker}, true) +
        (data.keyword_available ? "" : " · " + T.noKeyword)),
    );
    if (!data.hit) verdict.appendChild(el("p", data.not_found_text));
    (data.notes || []).forEach((n) => verdict.appendChild(el("p", n, { class: "muted" })));
    verdict.appendChild(el("p", T.timings + Object.entries(data.timings).map(([k, v]) => `${k} ${v}`).join(" · "), { class: "muted" }));
    results.appendChild(el("h2", T.results));
    const scroller = el("div", null, { class: "scroll-x" });  // the wide table scrolls, not the page
    scroller.appendChild(table(data.results, RESULT_COLUMNS));
    results.appendChild(scroller);
    if (data.debug) { stages.appendChild(el("h2", T.stages)); renderStages(data.debug, stages); }
  });
})();
