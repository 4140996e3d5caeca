// The hit-testing page's terms in words (issue 38): the search's stages (its timings), the judge's signals and the
// rerankers, each with a short line saying what it is (shown as a tooltip and in the page's glossary). The names are
// the pipeline's own (knowledge/retrieval/pipeline.py stages, judge.py SIGNALS, rerank.py reranker names).
(function () {
  "use strict";
  const fmt = (text, values) => interpolate(text, values, true);
  const STAGES = {
    analyze: [gettext("Analyse the question"), gettext("The question cut into words, with their weights, for the keyword path and the judge.")],
    embed: [gettext("Embed"), gettext("The question turned into a vector by the embedding model.")],
    vector: [gettext("Vector path"), gettext("Passages found by meaning: their vectors closest to the question's.")],
    keyword: [gettext("Keyword path"), gettext("Passages found by words: BM25 over the knowledge base's keyword index.")],
    load: [gettext("Load passages"), gettext("The candidates (and the passages next to them) read from the database.")],
    fuse: [gettext("Fuse"), gettext("The two paths' rankings merged into one.")],
    rerank: [gettext("Rerank"), gettext("The fused candidates scored again against the question and re-ordered.")],
    judge: [gettext("Judge"), gettext("Each candidate's relevance estimated from its signals; the verdict from the two lines.")],
    learn: [gettext("Learn from labels"), gettext("Passages confirmed for this question, or one worded almost the same, ranked first; passages confirmed wrong for it ranked last (knowledge bases that learn from feedback).")],
    merge: [gettext("Merge"), gettext("The knowledge bases' results merged into one list, duplicates dropped.")],
    read: [gettext("Read"), gettext("The best passages read against the question by the reader model.")],
    total: [gettext("Total"), gettext("The whole search, start to end.")],
  };
  const SIGNALS = {
    coverage: [gettext("Coverage"), gettext("The share of the question's weight (its rarer words weigh more) that the passage holds.")],
    token_share: [gettext("Word share"), gettext("The share of the question's content words that the passage holds.")],
    missing: [gettext("Missing word"), gettext("The weight of the heaviest question word the passage lacks (0: none is missing).")],
    cosine: [gettext("Cosine"), gettext("How close the passage's meaning is to the question's: the cosine of their vectors.")],
    cosine_z: [gettext("Cosine above background"), gettext("The cosine measured against the question's background (how close unrelated passages come), in standard deviations.")],
    rerank: [gettext("Rerank score"), gettext("The reranking model's score for the passage.")],
    question_cosine: [gettext("FAQ question cosine"), gettext("For an FAQ entry: how close its question is to this one in meaning.")],
  };
  const MODES = {
    hybrid: [gettext("hybrid"), gettext("Both paths: by meaning (vectors) and by words (keywords), fused.")],
    vector: [gettext("by meaning"), gettext("The vector path only.")],
    keyword: [gettext("by words"), gettext("The keyword path only.")],
  };
  const CROSS_ENCODER = "cross-encoder:";

  // [words, help] for one reranker name as the search reports it; several KBs' names come joined by commas.
  function reranker(name) {
    if (!name || name === "none") return [gettext("none"), gettext("Reranking is off: the fused ranking stands.")];
    if (name === "cosine-fallback") {
      return [gettext("cosine (no reranking model)"),
        gettext("No reranking model is loaded: the candidates are re-ordered by their vectors' cosine with the question.")];
    }
    if (name.startsWith(CROSS_ENCODER)) {
      return [fmt(gettext("model %(model)s"), { model: name.slice(CROSS_ENCODER.length) }),
        gettext("A cross-encoder model read each candidate together with the question and scored it.")];
    }
    return [name, ""];
  }
  function rerankers(names) {
    const each = String(names || "none").split(",").map((n) => reranker(n.trim()));
    return [each.map((e) => e[0]).join(", "), each.map((e) => e[1]).filter(Boolean).join(" ")];
  }
  const lookup = (key) => SIGNALS[key] || STAGES[key] || null;  // 「rerank」 as a column is the signal

  // The glossary: every stage and signal with its line, as a definition list.
  function glossary(list) {
    [[gettext("Stages"), STAGES], [gettext("The judge's signals"), SIGNALS]].forEach(([title, terms]) => {
      const head = document.createElement("dt");
      head.className = "glossary-group";
      head.textContent = title;
      list.appendChild(head);
      Object.entries(terms).forEach(([key, [word, help]]) => {
        const dt = document.createElement("dt");
        dt.textContent = word;
        dt.setAttribute("data-term", key);
        const code = document.createElement("code");
        code.textContent = key;
        dt.append(" ", code);
        const dd = document.createElement("dd");
        dd.textContent = help;
        list.append(dt, dd);
      });
    });
  }

  window.zhikuHitTerms = {
    stage: (key) => (STAGES[key] || [key, ""]),
    signal: (key) => SIGNALS[key] || null,
    mode: (key) => (MODES[key] || [key, ""]),
    word: (key) => (lookup(key) || [null])[0],
    help: (key) => (lookup(key) || [null, ""])[1],
    rerankers,
    glossary,
  };
})();
