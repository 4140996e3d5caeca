// The graded verdict in words, on every page (window.zhikuVerdict): a badge per outcome (answered / uncertain /
// not found, knowledge/retrieval/judge.py) and a bar of the three outcomes' shares (evaluation and calibration).
// Styles: .verdict-* in static/zhiku/console.css. Text is set with textContent only.
(function () {
  "use strict";
  // Visible strings: translated by Django's JavaScript catalogue (/jsi18n/, docs/i18n.md).
  const WORDS = { answered: gettext("Answered"), uncertain: gettext("Uncertain"), not_found: gettext("Not found") };
  const MEANING = {
    answered: gettext("The passages found hold the answer."),
    uncertain: gettext("The best passages found, which may not answer the question."),
    not_found: gettext("Nothing relevant was found."),
  };
  const ORDER = ["answered", "uncertain", "not_found"];
  const percent = (v) => (v === null || v === undefined ? "—" : `${Math.round(v * 100)}%`);

  function words(verdict) { return WORDS[verdict] || verdict || ""; }

  // <span class="badge verdict verdict-answered" data-verdict="answered">已回答</span>; null for no verdict.
  function badge(verdict, title) {
    if (!verdict) return null;
    const node = document.createElement("span");
    node.className = "badge verdict verdict-" + verdict;
    node.dataset.verdict = verdict;
    node.textContent = words(verdict);
    node.title = title || MEANING[verdict] || "";
    return node;
  }

  // The shares {answered, uncertain, not_found} (summing to 1) as a bar and in words: "已回答 60% · 不确定 30% · …".
  function outcomes(shares) {
    const box = document.createElement("div");
    box.className = "outcomes";
    if (!shares) { box.textContent = "—"; box.classList.add("muted"); return box; }
    const bar = document.createElement("div");
    bar.className = "outcome-bar";
    bar.setAttribute("aria-hidden", "true");
    const text = document.createElement("div");
    text.className = "outcome-words small";
    ORDER.forEach((v, i) => {
      const share = shares[v] || 0;
      const part = document.createElement("span");
      part.className = "verdict-" + v;
      part.style.width = (100 * share).toFixed(2) + "%";
      part.title = `${words(v)} ${percent(share)}`;
      bar.appendChild(part);
      if (i) text.appendChild(document.createTextNode(" · "));
      const item = document.createElement("span");
      item.dataset.verdict = v;
      const swatch = document.createElement("span");
      swatch.className = "swatch verdict-" + v;
      item.append(swatch, `${words(v)} ${percent(shares[v])}`);
      text.appendChild(item);
    });
    box.append(bar, text);
    return box;
  }

  window.zhikuVerdict = { ORDER, words, badge, outcomes, percent };
})();
