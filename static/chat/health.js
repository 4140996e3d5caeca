// KB health page (owners): GET /api/kbs/{id}/health/?since=N, and per question one click to add an FAQ entry
// (POST …/health/faq/), label the passage that answers it or add it to the golden set (POST …/health/labels/).
// Text goes in with textContent only (zhiku.el).
(function () {
  "use strict";
  const { api, errorText, el, button, formatTime, sectionPath } = window.zhiku;
  const page = document.getElementById("health-page");
  const base = `/api/kbs/${page.dataset.kbId}/health/`;
  // Visible strings: translated by Django's JavaScript catalogue (/jsi18n/, docs/i18n.md).
  const T = {
    question: gettext("Question"), count: gettext("Asked"), notFound: gettext("Not found"),
    uncertain: gettext("Uncertain"), answered: gettext("Answered"), last: gettext("Last asked"),
    passage: gettext("Best passage found"), actions: gettext("Fix"), none: gettext("Nothing here in this period."),
    noPassage: gettext("No passage found"), faq: gettext("Add as an FAQ entry"), label: gettext("Label the right passage"),
    golden: gettext("Add to the golden set"), labelled: gettext("labelled"), reason: gettext("Reason"),
    noReason: gettext("(no reason given)"), examples: gettext("Questions"), answer: gettext("The answer"),
    expected: gettext("Text the answer must hold (optional)"), save: gettext("Save"), saved: gettext("Saved."),
    pick: gettext("Pick the passage that answers the question:"), loading: gettext("Loading…"),
    replaced: gettext("That passage was replaced by a new version of its document. These are its current passages: pick one and save again."),
    summary: gettext("%(turns)s answers: %(answered)s answered, %(uncertain)s uncertain, %(not_found)s not found"),
  };
  const since = document.getElementById("health-since");
  const dialog = document.getElementById("health-dialog");
  const form = document.getElementById("health-form");
  const status = document.getElementById("health-dialog-status");
  let submit = null;
  const KEEP_OPEN = {};  // what a dialog's submit returns to stay open with its own status line

  function passageText(p) {
    if (!p) return el("span", T.noPassage, { class: "muted" });
    const box = el("div", null, { class: "passage" });
    box.appendChild(el("div", [p.title, sectionPath(p.section_path)].filter(Boolean).join(" › "), { class: "muted small" }));
    // A passage's table drawn as a table (static/zhiku/richtext.js, the renderer of every page's passages).
    box.appendChild(window.zhikuRich.render(p.content, el("div", null, { class: "small passage-text" })));
    return box;
  }

  function openDialog(title, row, body, ok, onSubmit) {
    document.getElementById("health-dialog-title").textContent = title;
    document.getElementById("health-dialog-question").textContent = row.question;
    const holder = document.getElementById("health-dialog-body");
    holder.replaceChildren(body);
    document.getElementById("health-dialog-ok").textContent = ok;
    status.textContent = "";
    submit = onSubmit;
    dialog.showModal();
  }

  form.addEventListener("submit", async (event) => {
    event.preventDefault();
    if (!submit) return;
    status.textContent = T.loading;
    try {
      if (await submit() === KEEP_OPEN) return;
      status.textContent = T.saved;
      dialog.close();
      load();
    } catch (e) {
      status.textContent = errorText(e);
    }
  });
  document.getElementById("health-dialog-cancel").addEventListener("click", () => dialog.close());

  function faqDialog(row) {
    const answer = el("textarea", null, { id: "health-faq-answer", rows: "5", maxlength: "5000", required: "", class: "wide" });
    const body = el("div");
    body.appendChild(el("label", T.answer, { for: "health-faq-answer" }));
    body.appendChild(answer);
    openDialog(T.faq, row, body, T.save, () => api("POST", base + "faq/", { question: row.question, answer: answer.value }));
    answer.focus();
  }

  function pickList(passages) {
    const list = el("div", null, { id: "health-picks" });
    list.appendChild(passages.length ? el("p", T.pick, { class: "small" }) : el("p", T.noPassage, { class: "muted" }));
    passages.forEach((p, i) => {
      const item = el("label", null, { class: "health-pick" });
      const radio = el("input", null, { type: "radio", name: "health-chunk", value: String(p.chunk_id) });
      if (i === 0) radio.checked = true;
      item.appendChild(radio);
      item.appendChild(passageText(p));
      list.appendChild(item);
    });
    return list;
  }

  function labelDialog(row, golden) {
    const body = el("div");
    body.appendChild(pickList(row.passages || []));
    let expected = null;
    if (golden) {
      expected = el("input", null, { type: "text", id: "health-expected", maxlength: "1000", class: "wide" });
      body.appendChild(el("label", T.expected, { for: "health-expected" }));
      body.appendChild(expected);
    }
    openDialog(golden ? T.golden : T.label, row, body, T.save, async () => {
      const picked = form.querySelector("input[name=health-chunk]:checked");
      try {
        return await api("POST", base + "labels/", {
          question: row.question, chunk_id: picked ? Number(picked.value) : 0, answer: expected ? expected.value : "",
        });
      } catch (e) {
        if (e.code !== "chunk_not_found") throw e;
        // A new version of the document replaced its chunks since this page was loaded: the report maps each
        // passage to the current version's (chat/health.py), so offer those and let the owner pick again.
        const data = await api("GET", `${base}?since=${encodeURIComponent(since.value)}`);
        const now = data.failing.concat(data.most_asked).find((r) => r.key === row.key);
        row.passages = now ? now.passages : [];
        document.getElementById("health-picks").replaceWith(pickList(row.passages));
        status.textContent = T.replaced;
        return KEEP_OPEN;
      }
    });
  }

  function questionTable(rows, withActions) {
    if (!rows.length) return el("p", T.none, { class: "muted" });
    const table = el("table", null, { class: "health-table" });
    const head = el("tr");
    const columns = [T.question, T.count, T.notFound, T.uncertain, T.last, T.passage];
    if (withActions) columns.push(T.actions); else columns.splice(2, 2, T.answered);
    columns.forEach((c) => head.appendChild(el("th", c)));
    table.appendChild(head);
    for (const row of rows) {
      const tr = el("tr", null, { "data-key": row.key });
      const q = el("td", row.question, { class: "question" });
      if (row.labelled) q.appendChild(el("span", T.labelled, { class: "badge manual" }));
      tr.appendChild(q);
      tr.appendChild(el("td", row.count, { class: "num" }));
      if (withActions) {
        tr.appendChild(el("td", row.not_found, { class: "num" }));
        tr.appendChild(el("td", row.uncertain, { class: "num" }));
      } else {
        tr.appendChild(el("td", row.answered, { class: "num" }));
      }
      tr.appendChild(el("td", formatTime(row.last_asked), { class: "small" }));
      const passage = el("td");
      passage.appendChild(passageText(row.best_passage));
      tr.appendChild(passage);
      if (withActions) {
        const actions = el("td", null, { class: "actions" });
        actions.appendChild(button(T.faq, () => faqDialog(row), "primary health-faq"));
        if ((row.passages || []).length) {
          actions.appendChild(button(T.label, () => labelDialog(row, false), "health-label"));
          actions.appendChild(button(T.golden, () => labelDialog(row, true), "health-golden"));
        }
        tr.appendChild(actions);
      }
      table.appendChild(tr);
    }
    return table;
  }

  function downvoteTable(rows) {
    if (!rows.length) return el("p", T.none, { class: "muted" });
    const table = el("table", null, { class: "health-table" });
    const head = el("tr");
    [T.reason, T.count, T.examples].forEach((c) => head.appendChild(el("th", c)));
    table.appendChild(head);
    for (const row of rows) {
      const tr = el("tr");
      tr.appendChild(el("td", row.reason || T.noReason, row.reason ? undefined : { class: "muted" }));
      tr.appendChild(el("td", row.count, { class: "num" }));
      tr.appendChild(el("td", row.questions.join(" · "), { class: "small" }));
      table.appendChild(tr);
    }
    return table;
  }

  async function load() {
    const failing = document.getElementById("health-failing");
    failing.replaceChildren(el("p", T.loading, { class: "muted" }));
    try {
      const data = await api("GET", `${base}?since=${encodeURIComponent(since.value)}`);
      document.getElementById("health-summary").textContent = interpolate(T.summary, {
        turns: data.turns, answered: data.verdicts.answered, uncertain: data.verdicts.uncertain, not_found: data.verdicts.not_found,
      }, true);
      failing.replaceChildren(questionTable(data.failing, true));
      document.getElementById("health-most").replaceChildren(questionTable(data.most_asked, false));
      document.getElementById("health-downvotes").replaceChildren(downvoteTable(data.downvotes));
      page.dataset.loaded = "1";
    } catch (e) {
      failing.replaceChildren(el("p", errorText(e), { class: "error" }));
    }
  }

  since.addEventListener("change", load);
  load();
})();
