// The two lines of the hit-testing page: GET/POST/PATCH /api/kbs/{id}/calibration/ (knowledge/api/calibration.py).
// The calibration's trade-off drawn as a chart (inline SVG built here: answerable kept, unanswerable rejected and
// unanswerable answered against the threshold, the KB's not-found gate and confidence line marked), what its
// questions get at the two lines in words, and for owners two number inputs that move the lines.
// Text is set with textContent only, never parsed as HTML.
(function () {
  "use strict";
  const panel = document.getElementById("operating-point");
  if (!panel) return;
  const kbId = parseInt(panel.dataset.kbId, 10);
  const isOwner = panel.dataset.owner === "1";
  const url = `/api/kbs/${kbId}/calibration/`;
  const csrfInput = document.querySelector("input[name=csrfmiddlewaretoken]");
  const csrf = csrfInput ? csrfInput.value : "";
  const $ = (id) => document.getElementById(id);
  const summary = $("op-summary"), actions = $("op-actions"), chartBox = $("op-chart"), curveBox = $("op-curve");
  const outcomesBox = $("op-outcomes"), linesForm = $("op-lines"), lineStatus = $("op-status");
  const { outcomes } = window.zhikuVerdict;
  const SVG = "http://www.w3.org/2000/svg";
  // Visible strings: translated by Django's JavaScript catalogue (/jsi18n/, docs/i18n.md).
  const fmt = (text, values) => interpolate(text, values, true);
  const STATUS = { none: gettext("not calibrated"), pending: gettext("waiting for calibration"), running: gettext("calibrating"),
                   ready: gettext("calibrated"), failed: gettext("calibration failed") };
  const SOURCE = { labelled: gettext("labelled questions"), self: gettext("generated questions"), "": "—" };
  const T = {
    lines: (gate, line) => fmt(gettext("Not-found gate %(gate)s · confidence line %(line)s"), { gate, line }),
    calibration: (status, source) => fmt(gettext(" · calibration: %(status)s · source: %(source)s"), { status, source }),
    questions: (a, u) => fmt(gettext(" · %(answerable)s answerable / %(unanswerable)s unanswerable questions"), { answerable: a, unanswerable: u }),
    fit: (slope, offset) => fmt(gettext("judge calibration: slope %(slope)s, offset %(offset)s"), { slope, offset }),
    error: gettext("Error: "),
    recalibrate: gettext("Recalibrate"),
    noCurve: gettext("No trade-off curve yet: it shows once calibration is done."),
    outcomesTitle: gettext("What the calibration's questions get at these two lines:"),
    answerable: gettext("Answerable questions"), unanswerable: gettext("Unanswerable questions"),
    noOutcomes: gettext("No outcomes yet: they show once calibration is done."),
    columns: [gettext("Threshold"), gettext("Answerable kept"), gettext("Unanswerable rejected"), gettext("Unanswerable answered")],
    atGate: gettext(" ← not-found gate"), atLine: gettext(" ← confidence line"),
    series: {
      answerable_kept: gettext("Answerable kept (relevance at or above the threshold)"),
      unanswerable_rejected: gettext("Unanswerable rejected (below the threshold)"),
      unanswerable_answered: gettext("Unanswerable answered (at or above the threshold)"),
    },
    gate: (v) => fmt(gettext("not-found gate %(value)s"), { value: v }),
    line: (v) => fmt(gettext("confidence line %(value)s"), { value: v }),
    axisX: gettext("threshold (relevance)"),
    chartTitle: gettext("Trade-off against the threshold"),
    zones: { not_found: gettext("not found"), uncertain: gettext("uncertain"), answered: gettext("answered") },
    saving: gettext("Saving…"), saved: gettext("Saved."), failed: gettext("Saving failed: "),
    readOnly: gettext("Only the knowledge base's owners can move the lines."),
  };
  const SERIES = [
    ["answerable_kept", "#0b5cad", ""], ["unanswerable_rejected", "#1a7f37", ""], ["unanswerable_answered", "#b42318", "6 4"],
  ];

  function el(tag, text, attrs) {
    const node = document.createElement(tag);
    if (text !== undefined && text !== null) node.textContent = String(text);
    if (attrs) for (const [k, v] of Object.entries(attrs)) node.setAttribute(k, v);
    return node;
  }
  function svg(tag, attrs, text) {
    const node = document.createElementNS(SVG, tag);
    for (const [k, v] of Object.entries(attrs || {})) node.setAttribute(k, String(v));
    if (text !== undefined) node.textContent = String(text);
    return node;
  }
  const pct = (v) => (v === null || v === undefined ? "—" : (100 * v).toFixed(1) + "%");
  const two = (v) => Number(v).toFixed(2);

  async function call(method, body) {
    const response = await fetch(url, {
      method, credentials: "same-origin",
      headers: { "Content-Type": "application/json", "X-CSRFToken": csrf },
      body: body === undefined ? undefined : JSON.stringify(body),
    });
    const data = await response.json().catch(() => ({}));
    if (!response.ok) {
      throw new Error(data.error ? data.error.message || data.error.code : String(response.status));
    }
    return data;
  }

  // The chart: x the threshold (0–1), y the share of questions (0–100%); the zones under the gate, between the
  // lines and above the confidence line shaded by the verdict they give.
  function chart(data) {
    const W = 680, H = 310, L = 52, R = 16, TOP = 40, B = 44;
    const x = (t) => L + (W - L - R) * t;
    const y = (s) => TOP + (H - TOP - B) * (1 - s);
    const gate = Number(data.threshold), line = Math.max(Number(data.answer_threshold), gate);
    const root = svg("svg", { viewBox: `0 0 ${W} ${H}`, class: "curve-chart", role: "img", "aria-label": T.chartTitle });
    root.appendChild(svg("title", {}, T.chartTitle));
    [["not_found", 0, gate], ["uncertain", gate, line], ["answered", line, 1]].forEach(([zone, a, b]) => {
      if (b <= a) return;
      root.appendChild(svg("rect", { x: x(a), y: y(1), width: x(b) - x(a), height: y(0) - y(1), class: "zone zone-" + zone, "data-zone": zone }));
      if (x(b) - x(a) > 60) root.appendChild(svg("text", { x: (x(a) + x(b)) / 2, y: y(0) - 6, "text-anchor": "middle", class: "zone-label" }, T.zones[zone]));
    });
    for (let i = 0; i <= 4; i++) {
      const s = i / 4;
      root.appendChild(svg("line", { x1: x(0), x2: x(1), y1: y(s), y2: y(s), class: "grid" }));
      root.appendChild(svg("text", { x: L - 6, y: y(s) + 4, "text-anchor": "end", class: "tick" }, `${100 * s}%`));
    }
    for (let i = 0; i <= 10; i++) {
      const t = i / 10;
      root.appendChild(svg("line", { x1: x(t), x2: x(t), y1: y(0), y2: y(0) + 4, class: "axis" }));
      root.appendChild(svg("text", { x: x(t), y: y(0) + 17, "text-anchor": "middle", class: "tick" }, t.toFixed(1)));
    }
    root.appendChild(svg("line", { x1: x(0), x2: x(1), y1: y(0), y2: y(0), class: "axis" }));
    root.appendChild(svg("line", { x1: x(0), x2: x(0), y1: y(0), y2: y(1), class: "axis" }));
    root.appendChild(svg("text", { x: (x(0) + x(1)) / 2, y: H - 6, "text-anchor": "middle", class: "axis-label" }, T.axisX));
    const points = [...data.curve].sort((a, b) => a.threshold - b.threshold);
    SERIES.forEach(([key, color, dash]) => {
      const pts = points.filter((p) => typeof p[key] === "number");
      if (!pts.length) return;
      const path = svg("polyline", { points: pts.map((p) => `${x(p.threshold).toFixed(1)},${y(p[key]).toFixed(1)}`).join(" "),
        fill: "none", stroke: color, "stroke-width": 2.2, "stroke-dasharray": dash || "none", "data-series": key, class: "series" });
      path.appendChild(svg("title", {}, T.series[key]));
      root.appendChild(path);
      pts.forEach((p) => {
        const dot = svg("circle", { cx: x(p.threshold), cy: y(p[key]), r: 2.6, fill: color });
        dot.appendChild(svg("title", {}, `${T.series[key]} · ${two(p.threshold)}: ${pct(p[key])}`));
        root.appendChild(dot);
      });
    });
    // The KB's two lines, each labelled on its own row above the plot, on the side with room for the words.
    [["gate", gate, T.gate(two(gate)), 14], ["confidence", line, T.line(two(line)), 30]].forEach(([name, v, text, row]) => {
      const g = svg("g", { "data-line": name, class: "mark mark-" + name });
      g.appendChild(svg("line", { x1: x(v), x2: x(v), y1: y(0), y2: row + 3 }));
      const left = x(v) > W / 2;
      g.appendChild(svg("text", { x: x(v) + (left ? -5 : 5), y: row, "text-anchor": left ? "end" : "start" }, text));
      root.appendChild(g);
    });
    const legend = el("ul", null, { class: "chart-legend small" });
    SERIES.forEach(([key, color, dash]) => {
      const item = el("li", null, { "data-series": key });
      const sample = svg("svg", { width: 28, height: 10, "aria-hidden": "true" });
      sample.appendChild(svg("line", { x1: 0, x2: 28, y1: 5, y2: 5, stroke: color, "stroke-width": 2.5, "stroke-dasharray": dash || "none" }));
      item.append(sample, " " + T.series[key]);
      legend.appendChild(item);
    });
    const box = el("figure", null, { class: "chart" });
    box.append(root, legend);
    return box;
  }

  function outcomesPart(data) {
    const o = data.outcomes || {};
    if (!o.answerable && !o.unanswerable) return el("p", T.noOutcomes, { class: "muted small" });
    const box = el("div");
    box.appendChild(el("p", T.outcomesTitle, { class: "small" }));
    const t = el("table", null, { class: "outcomes-table" });
    [["answerable", T.answerable], ["unanswerable", T.unanswerable]].forEach(([kind, words]) => {
      const tr = el("tr", null, { "data-kind": kind });
      const cell = el("td");
      cell.appendChild(outcomes(o[kind]));
      tr.append(el("th", words), cell);
      t.appendChild(tr);
    });
    box.appendChild(t);
    return box;
  }

  function curveTable(data) {
    const t = el("table");
    const head = el("tr");
    T.columns.forEach((c) => head.appendChild(el("th", c)));
    t.appendChild(head);
    data.curve.forEach((p) => {
      const tr = el("tr");
      const marks = (Math.abs(p.threshold - data.threshold) < 1e-9 ? T.atGate : "") +
                    (Math.abs(p.threshold - data.answer_threshold) < 1e-9 ? T.atLine : "");
      tr.appendChild(el("td", p.threshold.toFixed(2) + marks));
      tr.appendChild(el("td", `${pct(p.answerable_kept)} (${p.answerable_kept_count}/${data.answerable})`, { class: "num" }));
      tr.appendChild(el("td", `${pct(p.unanswerable_rejected)} (${p.unanswerable_rejected_count}/${data.unanswerable})`, { class: "num" }));
      tr.appendChild(el("td", pct(p.unanswerable_answered), { class: "num" }));
      if (marks) tr.classList.add("current");
      t.appendChild(tr);
    });
    return t;
  }

  function render(data) {
    panel.dataset.threshold = String(data.threshold);
    panel.dataset.answerThreshold = String(data.answer_threshold);
    summary.replaceChildren(
      el("strong", T.lines(two(data.threshold), two(data.answer_threshold))),
      el("span", T.calibration(STATUS[data.status] || data.status, SOURCE[data.source] || data.source) +
        (data.status === "ready" || data.answerable ? T.questions(data.answerable, data.unanswerable) : "")),
      el("span", " · " + T.fit(Number(data.slope).toFixed(3), Number(data.offset).toFixed(3)), { class: "muted small" }),
    );
    if (data.error) summary.appendChild(el("p", T.error + data.error, { class: "muted" }));
    outcomesBox.replaceChildren(outcomesPart(data));
    chartBox.replaceChildren(data.curve && data.curve.length ? chart(data) : el("p", T.noCurve, { class: "muted small" }));
    curveBox.replaceChildren(data.curve && data.curve.length ? curveTable(data) : el("p", T.noCurve, { class: "muted small" }));
    actions.replaceChildren();
    if (isOwner && linesForm) {
      linesForm.hidden = false;
      $("op-gate").value = two(data.threshold);
      $("op-line").value = two(data.answer_threshold);
      const button = el("button", T.recalibrate, { type: "button", id: "op-recalibrate" });
      button.addEventListener("click", async () => {
        button.disabled = true;
        try { render(await call("POST")); setTimeout(load, 5000); } catch (e) { actions.appendChild(el("span", " " + e.message)); }
      });
      actions.appendChild(button);
    } else {
      actions.appendChild(el("span", T.readOnly, { class: "muted small" }));
    }
  }

  if (linesForm) linesForm.addEventListener("submit", async (event) => {
    event.preventDefault();
    const body = { threshold: parseFloat($("op-gate").value), answer_threshold: parseFloat($("op-line").value) };
    lineStatus.className = "small muted";
    lineStatus.textContent = T.saving;
    $("op-save").disabled = true;
    try {
      render(await call("PATCH", body));
      lineStatus.className = "small ok-text";
      lineStatus.textContent = T.saved;
    } catch (e) {
      lineStatus.className = "small error-text";
      lineStatus.textContent = T.failed + e.message;
    }
    $("op-save").disabled = false;
  });

  async function load() {
    try { render(await call("GET")); } catch (e) { summary.textContent = T.error + e.message; }
  }
  load();
})();
