// Operating-point panel of the hit-testing page: GET/POST/PATCH /api/kbs/{id}/calibration/.
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
  const summary = document.getElementById("op-summary");
  const actions = document.getElementById("op-actions");
  const curveBox = document.getElementById("op-curve");
  // Visible strings: translated by Django's JavaScript catalogue (/jsi18n/, docs/i18n.md).
  const fmt = (text, values) => interpolate(text, values, true);
  const STATUS = { none: gettext("not calibrated"), pending: gettext("waiting for calibration"), running: gettext("calibrating"),
                   ready: gettext("calibrated"), failed: gettext("calibration failed") };
  const SOURCE = { labelled: gettext("labelled questions"), self: gettext("generated questions"), "": "—" };
  const T = {
    threshold: (v) => fmt(gettext("Current threshold %(value)s"), { value: v }),
    calibration: (status, source) => fmt(gettext(" · calibration: %(status)s · source: %(source)s"), { status, source }),
    questions: (a, u) => fmt(gettext(" · %(answerable)s answerable / %(unanswerable)s unanswerable questions"), { answerable: a, unanswerable: u }),
    error: gettext("Error: "),
    recalibrate: gettext("Recalibrate"),
    noCurve: gettext("No trade-off table yet: it shows once calibration is done."),
    columns: [gettext("Threshold"), gettext("Answerable kept"), gettext("Unanswerable rejected"), ""],
    current: gettext(" ← current"),
    use: gettext("Use as threshold"),
  };

  function el(tag, text, attrs) {
    const node = document.createElement(tag);
    if (text !== undefined && text !== null) node.textContent = String(text);
    if (attrs) for (const [k, v] of Object.entries(attrs)) node.setAttribute(k, v);
    return node;
  }
  function pct(v) { return v === null || v === undefined ? "—" : (100 * v).toFixed(1) + "%"; }

  async function call(method, body) {
    const response = await fetch(url, {
      method, credentials: "same-origin",
      headers: { "Content-Type": "application/json", "X-CSRFToken": csrf },
      body: body === undefined ? undefined : JSON.stringify(body),
    });
    const data = await response.json().catch(() => ({}));
    if (!response.ok) {
      const message = data.error ? data.error.code + " — " + data.error.message : String(response.status);
      throw new Error(message);
    }
    return data;
  }

  function render(data) {
    summary.replaceChildren(
      el("strong", T.threshold(Number(data.threshold).toFixed(2))),
      el("span", T.calibration(STATUS[data.status] || data.status, SOURCE[data.source] || data.source) +
        ` · slope ${Number(data.slope).toFixed(3)} · offset ${Number(data.offset).toFixed(3)}` +
        (data.status === "ready" || data.answerable ? T.questions(data.answerable, data.unanswerable) : "")),
    );
    if (data.error) summary.appendChild(el("p", T.error + data.error, { class: "muted" }));
    actions.replaceChildren();
    if (isOwner) {
      const button = el("button", T.recalibrate, { type: "button" });
      button.addEventListener("click", async () => {
        button.disabled = true;
        try { render(await call("POST")); setTimeout(load, 5000); } catch (e) { actions.appendChild(el("span", " " + e.message)); }
      });
      actions.appendChild(button);
    }
    curveBox.replaceChildren();
    if (!data.curve || !data.curve.length) {
      curveBox.appendChild(el("p", T.noCurve, { class: "muted" }));
      return;
    }
    const t = el("table");
    const head = el("tr");
    T.columns.forEach((c) => head.appendChild(el("th", c)));
    t.appendChild(head);
    data.curve.forEach((p) => {
      const tr = el("tr");
      const current = Math.abs(p.threshold - data.threshold) < 1e-9;
      tr.appendChild(el("td", p.threshold.toFixed(2) + (current ? T.current : "")));
      tr.appendChild(el("td", `${pct(p.answerable_kept)} (${p.answerable_kept_count}/${data.answerable})`));
      tr.appendChild(el("td", `${pct(p.unanswerable_rejected)} (${p.unanswerable_rejected_count}/${data.unanswerable})`));
      const cell = el("td");
      if (isOwner && !current) {
        const use = el("button", T.use, { type: "button" });
        use.addEventListener("click", async () => {
          use.disabled = true;
          try { render(await call("PATCH", { threshold: p.threshold })); } catch (e) { cell.appendChild(el("span", " " + e.message)); }
        });
        cell.appendChild(use);
      }
      tr.appendChild(cell);
      if (current) tr.style.fontWeight = "bold";
      t.appendChild(tr);
    });
    curveBox.appendChild(t);
  }

  async function load() {
    try { render(await call("GET")); } catch (e) { summary.textContent = T.error + e.message; }
  }
  load();
})();
