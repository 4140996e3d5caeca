// An assistant's page (assistants/templates/assistants/detail.html): its usage, the share link (copy, a new link),
// the embed snippet, and the try panel, which asks the assistant over POST /api/assistants/<id>/chat/stream/
// (assistants/sse.py) and shows the streamed answer with its [n] citations and sources. Everything from answers and
// documents is set with textContent: nothing is parsed as HTML.
(function () {
  "use strict";
  const { api, el, errorText, csrfToken, sectionPath } = window.zhiku;
  const $ = (id) => document.getElementById(id);
  const page = $("assistant-page");
  const id = page.dataset.assistantId;
  const fmt = (text, values) => interpolate(text, values, true);
  // Visible strings: translated by Django's JavaScript catalogue (/jsi18n/, docs/i18n.md).
  const T = {
    searching: gettext("Searching…"), answering: gettext("Answering…"), nothingFound: gettext("Nothing relevant found"),
    sources: gettext("Sources"), source: (n) => fmt(gettext("Source %(n)s"), { n }),
    document: (n) => fmt(gettext("Document %(id)s"), { id: n }),
    relevance: (v) => fmt(gettext(" · relevance %(value)s"), { value: v }),
    failed: gettext("Something went wrong: "), connectionLost: gettext("Connection lost"),
    rotated: gettext("A new link is ready; the old one no longer works."),
    confirmRotate: gettext("Make a new share link? The old link stops working at once."),
    channel: { console: gettext("console"), api: gettext("OpenAI-compatible API"), mcp: gettext("MCP"),
               embed: gettext("embedded chat"), share: gettext("share link"), try: gettext("assistant preview") },
    byChannel: gettext("By channel: "),
  };

  // --- usage --------------------------------------------------------------------------------------------
  async function loadUsage() {
    const days = $("usage-since").value;
    const since = days ? "?since=" + encodeURIComponent(new Date(Date.now() - Number(days) * 86400000).toISOString()) : "";
    try {
      const u = await api("GET", `/api/assistants/${id}/usage/${since}`);
      const values = { conversations: u.conversations, questions: u.questions, ...u.outcomes, up: u.feedback.up,
                       down: u.feedback.down, tokens: `${u.tokens.prompt} / ${u.tokens.completion}` };
      document.querySelectorAll("[data-usage]").forEach((cell) => { cell.textContent = String(values[cell.dataset.usage] ?? "—"); });
      const channels = Object.entries(u.conversations_by_channel || {}).map(([c, n]) => `${T.channel[c] || c} ${n}`);
      $("usage-channels").textContent = channels.length ? T.byChannel + channels.join(" · ") : "";
    } catch (e) { $("usage-channels").textContent = errorText(e); }
  }
  $("usage-since").addEventListener("change", loadUsage);

  // --- share link and embed snippet ------------------------------------------------------------------------
  document.querySelectorAll("[data-copy-from]").forEach((b) => b.addEventListener("click", () =>
    window.zhikuKeys.copyText($(b.dataset.copyFrom), $("try-status"))));
  const rotate = $("share-rotate");
  if (rotate) {
    rotate.addEventListener("click", async () => {
      if (!window.confirm(T.confirmRotate)) return;
      try {
        const r = await api("POST", `/api/assistants/${id}/share/rotate/`);
        const url = $("share-url");
        url.textContent = url.dataset.base + r.share_path;
        rotate.after(el("span", T.rotated, { class: "small ok-text" }));
      } catch (e) { rotate.after(el("span", errorText(e), { class: "small error-text" })); }
    });
  }

  // --- the try panel ------------------------------------------------------------------------------------------
  const box = $("try-messages");
  const form = $("try-form");
  const input = $("try-question");
  const send = $("try-send");
  const status = $("try-status");
  const state = { conversation: null, busy: false };

  // Answer text with [n] / 【n】 markers as citation chips (text nodes otherwise).
  function renderAnswer(text, node) {
    node.replaceChildren();
    String(text).split(/([\[【]\d{1,3}[\]】])/).forEach((part) => {
      const m = /^[\[【](\d{1,3})[\]】]$/.exec(part);
      if (m) {
        const cite = el("span", "[" + m[1] + "]", { class: "cite", title: T.source(m[1]) });
        cite.dataset.n = m[1];
        node.appendChild(cite);
      } else if (part) node.appendChild(document.createTextNode(part));
    });
  }
  function renderSources(view, sources, cited) {
    view.sources.replaceChildren();
    if (!sources.length) return;
    view.sources.appendChild(el("div", T.sources, { class: "muted small" }));
    const ol = el("ol");
    sources.forEach((s) => {
      const li = el("li");
      li.value = s.n; li.dataset.n = String(s.n);
      if (cited.has(s.n)) li.classList.add("cited");
      const doc = s.document || {};
      li.appendChild(el("span", doc.title || doc.source_name || T.document(doc.id), { class: "src-title" }));
      const path = sectionPath((s.section_path || []).filter((p) => p && p !== doc.title));
      if (path) li.appendChild(el("span", " · " + path, { class: "muted small" }));
      const rel = s.scores && typeof s.scores.relevance === "number" ? s.scores.relevance : null;
      if (rel !== null) li.appendChild(el("span", T.relevance(rel.toFixed(2)), { class: "muted small" }));
      li.appendChild(window.zhikuRich.render(s.content || "", el("div", null, { class: "snippet small" })));
      ol.appendChild(li);
    });
    view.sources.appendChild(ol);
  }
  function answerView() {
    const root = el("div", null, { class: "msg assistant" });
    const view = { root, text: "", sources: [], verdict: el("div", null, { class: "verdict-line" }),
                   answer: el("div", null, { class: "answer" }), sourcesBox: null };
    view.sources = el("div", null, { class: "sources" });
    root.append(view.verdict, view.answer, view.sources);
    box.appendChild(root);
    return view;
  }
  function setVerdict(view, verdict) {
    const badge = window.zhikuVerdict.badge(verdict);
    view.verdict.replaceChildren(...(badge ? [badge] : []));
    if (verdict) view.root.dataset.verdict = verdict;
  }
  function handle(view, ev) {
    switch (ev.type) {
      case "start": state.conversation = ev.conversation; status.textContent = T.searching; break;
      case "sources":
        view.sourceList = ev.sources || [];
        setVerdict(view, ev.verdict);
        renderSources(view, view.sourceList, new Set());
        status.textContent = ev.hit ? T.answering : T.nothingFound;
        break;
      case "token": view.text += ev.text; renderAnswer(view.text, view.answer); break;
      case "finish":
        view.text = ev.answer;
        renderAnswer(view.text, view.answer);
        setVerdict(view, ev.verdict);
        renderSources(view, view.sourceList || [], new Set((ev.citations || []).map((c) => c.n)));
        view.root.classList.add("done");
        status.textContent = "";
        break;
      case "error":
        view.answer.appendChild(el("div", T.failed + (ev.message || ev.code) + " (" + ev.code + ")", { class: "error-text" }));
        view.root.classList.add("done");
        status.textContent = "";
        break;
    }
  }
  async function ask(question) {
    if (state.busy || !question) return;
    state.busy = true; send.disabled = true;
    box.appendChild(el("div", question, { class: "msg user" }));
    const view = answerView();
    let buffer = "";
    try {
      const res = await fetch(`/api/assistants/${id}/chat/stream/`, {
        method: "POST", credentials: "same-origin",
        headers: { "Content-Type": "application/json", "X-CSRFToken": csrfToken(), Accept: "text/event-stream" },
        body: JSON.stringify({ question, conversation: state.conversation }),
      });
      if (!res.ok) {
        let data = {}; try { data = await res.json(); } catch (e) { /* not JSON */ }
        handle(view, Object.assign({ type: "error" }, data.error || { code: "http_" + res.status }));
        return;
      }
      const reader = res.body.getReader();
      const decoder = new TextDecoder();
      for (;;) {
        const { value, done } = await reader.read();
        if (done) break;
        buffer += decoder.decode(value, { stream: true });
        let cut;
        while ((cut = buffer.indexOf("\n\n")) >= 0) {
          const frame = buffer.slice(0, cut); buffer = buffer.slice(cut + 2);
          const data = frame.split("\n").filter((l) => l.startsWith("data:")).map((l) => l.slice(5).trim()).join("\n");
          if (data) handle(view, JSON.parse(data));
        }
      }
    } catch (e) {
      handle(view, { type: "error", code: "network", message: T.connectionLost });
    } finally {
      state.busy = false; send.disabled = false;
      loadUsage();
    }
  }
  form.addEventListener("submit", (e) => { e.preventDefault(); const q = input.value.trim(); input.value = ""; ask(q); });
  document.querySelectorAll("#try-suggested .suggestion").forEach((b) => b.addEventListener("click", () => ask(b.dataset.question)));
  $("try-reset").addEventListener("click", () => {
    if (state.busy) return;
    state.conversation = null;
    box.querySelectorAll(".msg:not(.opening)").forEach((n) => n.remove());
    input.focus();
  });

  loadUsage();
})();
