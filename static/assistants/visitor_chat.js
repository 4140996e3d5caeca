// A share link's page and the embedded chat (assistants/share.py, assistants/embed.py): ask the assistant, watch
// the answer stream (SSE over fetch) with its sources, rate it, reopen one's own earlier chats. Every node is built
// with the DOM and textContent: nothing an answer or a document says is parsed as HTML.
(function () {
  "use strict";
  const C = JSON.parse(document.getElementById("vc-config").textContent);
  const T = C.strings;
  const $ = (id) => document.getElementById(id);
  const box = $("vc-messages"), form = $("vc-form"), question = $("vc-question"), send = $("vc-send");
  const state = { conversation: null, busy: false };
  let ticket = C.ticket || "";
  if (C.embedded) {
    // The frame's own storage (partitioned by the embedding site where the browser does so): the same visitor
    // on the next visit. A ticket the server no longer accepts is replaced by the page's fresh one (see request).
    try {
      const kept = localStorage.getItem(C.storageKey);
      if (kept) ticket = kept; else localStorage.setItem(C.storageKey, ticket);
    } catch (e) { /* storage blocked: this page's ticket, for this visit */ }
  }

  function el(tag, text, className) {
    const node = document.createElement(tag);
    if (text != null) node.textContent = text;
    if (className) node.className = className;
    return node;
  }
  function headers(json) {
    const h = { Accept: json ? "application/json" : "text/event-stream" };
    if (C.embedded) h["X-Zhiku-Ticket"] = ticket;
    else {
      const token = document.querySelector("input[name=csrfmiddlewaretoken]");
      if (token) h["X-CSRFToken"] = token.value;
    }
    return h;
  }
  async function request(path, options, retried) {
    const { sse, ...rest } = options || {};
    const opts = Object.assign({ credentials: "same-origin" }, rest);
    opts.headers = Object.assign(headers(!sse), opts.body ? { "Content-Type": "application/json" } : {});
    const res = await fetch(C.base + path, opts);
    if (res.status === 403 && C.embedded && !retried && ticket !== C.ticket) {
      const body = await res.clone().json().catch(() => ({}));
      if (body.error && body.error.code === "embed_ticket_invalid") {
        ticket = C.ticket;
        try { localStorage.setItem(C.storageKey, ticket); } catch (e) { /* ignore */ }
        return request(path, options, true);
      }
    }
    return res;
  }
  function scrollDown() { box.scrollTop = box.scrollHeight; }

  // --- messages ------------------------------------------------------------------------------------
  function userBubble(text) { box.appendChild(el("div", text, "vc-msg user")); scrollDown(); }
  function assistantView() {
    const root = el("div", null, "vc-msg assistant");
    const view = { root, id: null, text: "", sources: [], tag: el("div", null, "vc-tag"), answer: el("div", null, "vc-answer"),
      status: el("div", T.thinking, "vc-status"), sourcesBox: el("div", null, "vc-sources"), feedback: el("div", null, "vc-feedback") };
    view.tag.hidden = true; view.sourcesBox.hidden = true; view.feedback.hidden = true;
    [view.tag, view.answer, view.status, view.sourcesBox, view.feedback].forEach((n) => root.appendChild(n));
    box.appendChild(root);
    return view;
  }
  // The answer as Markdown, drawn by the console's own renderer (static/zhiku/richtext.js: tables, lists, code, all
  // built with textContent); a citation [n] of a source the answer has becomes a marker that opens that source.
  function renderAnswer(view) {
    window.zhikuRich.markdown(view.text, view.answer, (n) => {
      if (!view.sources.some((s) => s.n === n)) return null;
      const cite = el("span", "[" + n + "]", "vc-cite");
      cite.addEventListener("click", () => flash(view, n));
      return cite;
    });
    scrollDown();
  }
  function flash(view, n) {
    const li = view.sourcesBox.querySelector('li[data-n="' + n + '"]');
    if (!li) return;
    li.classList.add("flash");
    const snippet = li.querySelector(".vc-snippet");
    if (snippet) snippet.hidden = false;
    setTimeout(() => li.classList.remove("flash"), 1500);
  }
  function renderSources(view, cited) {
    const list = view.sources;
    view.sourcesBox.textContent = "";
    if (!list.length) { view.sourcesBox.hidden = true; return; }
    view.sourcesBox.hidden = false;
    view.sourcesBox.appendChild(el("div", T.sources, "vc-muted"));
    const ol = el("ol");
    list.forEach((s) => {
      const li = el("li");
      li.dataset.n = s.n;
      if (s.redacted) { li.appendChild(el("span", T.redacted, "vc-muted")); ol.appendChild(li); return; }
      if (cited && cited.has(s.n)) li.classList.add("cited");
      const title = el(/^https?:\/\//i.test(s.url || "") ? "a" : "span", s.title, "vc-src-title");
      if (title.tagName === "A") { title.href = s.url; title.target = "_blank"; title.rel = "noopener noreferrer"; }
      li.appendChild(title);
      const where = (s.section_path || []).filter((x) => x && x !== s.title).join(" › ");
      if (where) li.appendChild(el("span", " · " + where, "vc-where"));
      if (s.content) {
        const snippet = el("div", null, "vc-snippet");
        window.zhikuRich.render(s.content, snippet);
        snippet.hidden = true;
        li.appendChild(snippet);
        li.addEventListener("click", () => { snippet.hidden = !snippet.hidden; });
      }
      ol.appendChild(li);
    });
    view.sourcesBox.appendChild(ol);
  }
  function setVerdict(view, verdict) {
    view.root.classList.remove("answered", "uncertain", "not_found");
    if (verdict) view.root.classList.add(verdict);
    view.tag.hidden = verdict !== "uncertain" && verdict !== "not_found";
    view.tag.textContent = verdict === "uncertain" ? T.uncertain : verdict === "not_found" ? T.notFound : "";
  }
  function renderFeedback(view, current) {
    view.feedback.textContent = "";
    view.feedback.hidden = !view.id;
    [["up", "👍 " + T.up], ["down", "👎 " + T.down]].forEach(([rating, label]) => {
      const b = el("button", label);
      b.type = "button";
      b.dataset.rating = rating;
      if (current === rating) b.classList.add("chosen");
      b.addEventListener("click", async () => {
        const res = await request("feedback/", { method: "POST", body: JSON.stringify({ message: view.id, rating }) });
        if (res.ok) renderFeedback(view, rating);
      });
      view.feedback.appendChild(b);
    });
  }

  // --- asking ---------------------------------------------------------------------------------------
  function handle(view, ev) {
    if (ev.type === "start") { state.conversation = ev.conversation; view.id = ev.message; }
    else if (ev.type === "sources") { view.sources = ev.sources || []; setVerdict(view, ev.verdict); renderSources(view); }
    else if (ev.type === "token") { view.status.hidden = true; view.text += ev.text; renderAnswer(view); }
    else if (ev.type === "finish") {
      view.status.hidden = true; view.text = ev.answer; view.id = ev.message;
      setVerdict(view, ev.verdict); renderAnswer(view);
      renderSources(view, new Set((ev.citations || []).map((c) => c.n)));
      renderFeedback(view, null);
    } else if (ev.type === "error") {
      view.status.hidden = true;
      view.root.appendChild(el("div", ev.message || T.failed, "vc-error"));
    }
  }
  async function ask(text) {
    if (state.busy || !text.trim()) return;
    state.busy = true; send.disabled = true;
    $("vc-suggested").textContent = "";
    userBubble(text);
    const view = assistantView();
    try {
      const res = await request("chat/stream/", { method: "POST", sse: true,
        body: JSON.stringify({ question: text, conversation: state.conversation }) });
      if (!res.ok) {
        const body = await res.json().catch(() => ({}));
        view.status.hidden = true;
        view.root.appendChild(el("div", res.status === 429 ? T.busy : (body.error && body.error.message) || T.failed, "vc-error"));
        return;
      }
      const reader = res.body.getReader();
      const decoder = new TextDecoder();
      let buffer = "";
      for (;;) {
        const { value, done } = await reader.read();
        if (done) break;
        buffer += decoder.decode(value, { stream: true });
        let cut;
        while ((cut = buffer.indexOf("\n\n")) >= 0) {
          const frame = buffer.slice(0, cut);
          buffer = buffer.slice(cut + 2);
          const data = frame.split("\n").find((line) => line.startsWith("data: "));
          if (data) handle(view, JSON.parse(data.slice(6)));
        }
      }
    } catch (e) {
      view.status.hidden = true;
      view.root.appendChild(el("div", T.failed, "vc-error"));
    } finally {
      state.busy = false; send.disabled = false;
    }
  }

  // --- the start of a chat, and earlier chats ------------------------------------------------------
  function fresh() {
    state.conversation = null;
    box.textContent = "";
    if (C.opening) { const v = assistantView(); v.status.hidden = true; v.text = C.opening; renderAnswer(v); }
    const chips = $("vc-suggested");
    chips.textContent = "";
    (C.suggested || []).forEach((q) => {
      const b = el("button", q, "vc-suggest");
      b.type = "button";
      b.addEventListener("click", () => ask(q));
      chips.appendChild(b);
    });
  }
  async function openConversation(id) {
    const res = await request("conversations/" + id + "/");
    if (!res.ok) return;
    const data = await res.json();
    fresh();
    $("vc-suggested").textContent = "";
    state.conversation = data.id;
    data.messages.forEach((m) => {
      if (m.role === "user") { userBubble(m.content); return; }
      const v = assistantView();
      v.status.hidden = true; v.id = m.id; v.text = m.content || ""; v.sources = m.sources || [];
      setVerdict(v, m.verdict); renderAnswer(v);
      renderSources(v, new Set((m.citations || []).map((c) => c.n)));
      if (m.status === "complete") renderFeedback(v, m.feedback);
    });
    $("vc-history").hidden = true;
  }
  async function toggleHistory() {
    const nav = $("vc-history");
    nav.hidden = !nav.hidden;
    $("vc-history-toggle").setAttribute("aria-expanded", String(!nav.hidden));
    if (nav.hidden) return;
    const res = await request("conversations/");
    const list = $("vc-conversations");
    list.textContent = "";
    const rows = res.ok ? (await res.json()).results : [];
    $("vc-conversations-empty").hidden = rows.length > 0;
    rows.forEach((c) => {
      const li = el("li");
      const b = el("button", c.title);
      b.type = "button";
      b.dataset.id = c.id;
      b.addEventListener("click", () => openConversation(c.id));
      li.appendChild(b);
      list.appendChild(li);
    });
  }

  form.addEventListener("submit", (e) => { e.preventDefault(); const text = question.value; question.value = ""; ask(text); });
  question.addEventListener("keydown", (e) => {
    if (e.key === "Enter" && !e.shiftKey && !e.isComposing) { e.preventDefault(); form.requestSubmit(); }
  });
  $("vc-new").addEventListener("click", fresh);
  $("vc-history-toggle").addEventListener("click", toggleHistory);
  fresh();
  document.body.dataset.ready = "1";  // the page's handlers are in place (tests wait for it)
})();
