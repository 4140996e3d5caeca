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
  const STATUS = { none: "未校准", pending: "等待校准", running: "校准中", ready: "已校准", failed: "校准失败" };
  const SOURCE = { labelled: "标注问题 labelled", self: "自动生成的问题 self", "": "—" };

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
      el("strong", "当前阈值 threshold " + Number(data.threshold).toFixed(2)),
      el("span", ` · 校准 calibration: ${STATUS[data.status] || data.status} · 来源 source: ${SOURCE[data.source] || data.source}` +
        ` · slope ${Number(data.slope).toFixed(3)} · offset ${Number(data.offset).toFixed(3)}` +
        (data.status === "ready" || data.answerable ? ` · 可回答 ${data.answerable} / 不可回答 ${data.unanswerable} 个问题` : "")),
    );
    if (data.error) summary.appendChild(el("p", "错误 error: " + data.error, { class: "muted" }));
    actions.replaceChildren();
    if (isOwner) {
      const button = el("button", "重新校准 Recalibrate", { type: "button" });
      button.addEventListener("click", async () => {
        button.disabled = true;
        try { render(await call("POST")); setTimeout(load, 5000); } catch (e) { actions.appendChild(el("span", " " + e.message)); }
      });
      actions.appendChild(button);
    }
    curveBox.replaceChildren();
    if (!data.curve || !data.curve.length) {
      curveBox.appendChild(el("p", "还没有取舍表：校准完成后显示。No trade-off table yet.", { class: "muted" }));
      return;
    }
    const t = el("table");
    const head = el("tr");
    ["阈值 threshold", "答案保留率 answerable kept", "拒答率 unanswerable rejected", ""].forEach((c) => head.appendChild(el("th", c)));
    t.appendChild(head);
    data.curve.forEach((p) => {
      const tr = el("tr");
      const current = Math.abs(p.threshold - data.threshold) < 1e-9;
      tr.appendChild(el("td", p.threshold.toFixed(2) + (current ? " ← 当前" : "")));
      tr.appendChild(el("td", `${pct(p.answerable_kept)} (${p.answerable_kept_count}/${data.answerable})`));
      tr.appendChild(el("td", `${pct(p.unanswerable_rejected)} (${p.unanswerable_rejected_count}/${data.unanswerable})`));
      const cell = el("td");
      if (isOwner && !current) {
        const use = el("button", "设为阈值 Use", { type: "button" });
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
    try { render(await call("GET")); } catch (e) { summary.textContent = "错误 error: " + e.message; }
  }
  load();
})();
