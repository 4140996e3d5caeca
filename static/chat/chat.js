// Chat page: websocket (SSE fallback) streaming, each answer's verdict, sources, feedback (thanked, saying what it
// taught), past conversations (searched, renamed inline), and on a phone the question box held at the bottom.
// Every node is built with DOM APIs and textContent; nothing from documents, answers or
// titles is ever parsed as HTML. Answers are a tiny Markdown subset rendered the same way by the console's shared
// static/zhiku/richtext.js (markdown(), also the share link's and the embed's), the verdict's words come from static/zhiku/verdict.js.
(function () {
  "use strict";

  const $ = (id) => document.getElementById(id);
  const messagesBox = $("messages");
  const form = $("ask-form");
  const questionInput = $("question");
  const sendButton = $("send");
  const stopButton = $("stop");
  const statusLine = $("status");
  const searchBox = $("conversation-search");
  const chatBox = document.querySelector(".chat");
  const csrf = form.querySelector("input[name=csrfmiddlewaretoken]").value;

  // Visible strings: translated by Django's JavaScript catalogue (/jsi18n/, docs/i18n.md).
  const fmt = (text, values) => interpolate(text, values, true);
  const T = {
    pages: (start, end) => fmt(gettext("pages %(start)s–%(end)s"), { start, end }),
    page: (start) => fmt(gettext("page %(start)s"), { start }),
    source: (n) => fmt(gettext("Source %(n)s"), { n }),
    sources: gettext("Sources"),
    document: (id) => fmt(gettext("Document %(id)s"), { id }),
    relevance: (v) => fmt(gettext(" · relevance %(value)s"), { value: v }),
    extractive: gettext("Extracted answer (no language model configured)"),
    verdictBy: { llm: gettext("judged by the language model"), faq: gettext("the FAQ entry's own answer") },
    confidence: (v) => fmt(gettext("confidence %(value)s"), { value: v }),
    firstToken: (ms) => fmt(gettext("first token %(ms)s ms"), { ms }),
    total: (ms) => fmt(gettext("total %(ms)s ms"), { ms }),
    status: (s) => fmt(gettext("status %(status)s"), { status: s }),
    useful: gettext("👍 Useful"), notUseful: gettext("👎 Not useful"),
    whatWrong: gettext("What was wrong? (optional)"), submit: gettext("Submit"),
    wrongPassage: gettext("The cited passage is wrong"),
    feedbackFailed: gettext("Feedback failed"),
    // What a vote did, said when it is sent (the API's `labelled`: chat/feedback_labels.py, docs/relevance.md).
    thanksUp: gettext("Thank you: recorded as useful."),
    thanksDown: gettext("Thank you: recorded. The knowledge base's owners see this answer, with your reason, on its health page."),
    taughtUp: gettext("The cited passage now counts as answering this question."),
    taughtWrong: gettext("The cited passage is now marked wrong for this question: it is ranked last for it when the knowledge base learns."),
    queued: gettext("Your word on the cited passage waits in the knowledge base's review queue until an editor confirms it."),
    searching: gettext("Searching…"),
    searchedFor: (q) => fmt(gettext("Searched for: %(query)s"), { query: q }),
    answering: gettext("Answering…"), nothingFound: gettext("Nothing relevant found"),
    stopped: gettext("Stopped."), failed: gettext("Something went wrong: "),
    connectionLost: gettext("Connection lost"), requestFailed: gettext("Request failed"),
    conversation: (id) => fmt(gettext("Conversation %(id)s"), { id }),
    remove: gettext("Delete"), confirmRemove: gettext("Delete this conversation?"),
    rename: gettext("Rename"), renameFailed: gettext("Could not rename: "),
    cannotOpen: gettext("Cannot open the conversation"),
    incomplete: (code) => fmt(gettext("Incomplete: %(code)s"), { code }),
    chooseKb: gettext("Choose at least one knowledge base"), sending: gettext("Sending…"),
    // A saved conversation as the reader may read it now (chat/history.py): withheld sources and answers.
    sourceHidden: gettext("Source no longer visible"),
    answerHidden: gettext("This answer is hidden: it was given from sources you can no longer read."),
  };

  const state = { conversation: null, ws: null, wsFailures: 0, useSSE: !window.WebSocket, current: null, abort: null, queued: null };

  // --- DOM helpers -----------------------------------------------------------
  function el(tag, text, className) {
    const node = document.createElement(tag);
    if (text !== undefined && text !== null) node.textContent = String(text);
    if (className) node.className = className;
    return node;
  }
  function webLink(url) {
    return typeof url === "string" && /^https?:\/\//i.test(url);
  }
  function pagesLabel(p) {
    if (!p || p.start === null || p.start === undefined) return "";
    return p.end && p.end !== p.start ? T.pages(p.start, p.end) : T.page(p.start);
  }
  function setStatus(text) { statusLine.textContent = text || ""; }
  function scrollDown() { window.scrollTo(0, document.body.scrollHeight); }

  // --- answers as Markdown: the console's renderer, shared with the share link and the embed (richtext.js) ---
  function citeFor(view) {
    return (n) => {
      const cite = el("span", "[" + n + "]", "cite");
      cite.dataset.n = String(n);
      cite.title = T.source(n);
      cite.addEventListener("click", () => flashSource(view, n));
      return cite;
    };
  }
  function renderMarkdown(text, container, view) {
    window.zhikuRich.markdown(text, container, citeFor(view));
  }

  // --- one assistant message on screen -----------------------------------------
  function userBubble(text) {
    const node = el("div", text, "msg user");
    messagesBox.appendChild(node);
    return node;
  }
  function assistantView() {
    const root = el("div", null, "msg assistant");
    const view = {
      root, id: null, text: "", sources: [], cited: new Set(), rendered: false,
      verdict: el("div", null, "verdict-line"),
      rewrite: el("div", null, "rewrite"), answer: el("div", null, "answer"), error: el("div", null, "error"),
      sourcesBox: el("div", null, "sources"), meta: el("div", null, "meta"), feedback: el("div", null, "feedback"),
    };
    view.rewrite.hidden = true; view.error.hidden = true; view.sourcesBox.hidden = true; view.verdict.hidden = true;
    [view.verdict, view.rewrite, view.answer, view.error, view.sourcesBox, view.meta, view.feedback].forEach((n) => root.appendChild(n));
    messagesBox.appendChild(root);
    return view;
  }
  function renderAnswer(view) {
    view.rendered = false;
    renderMarkdown(view.text, view.answer, view);
  }
  function scheduleRender(view) {
    if (view.pending) return;
    view.pending = true;
    requestAnimationFrame(() => { view.pending = false; renderAnswer(view); scrollDown(); });
  }
  function renderSources(view) {
    const box = view.sourcesBox;
    box.replaceChildren();
    if (!view.sources.length) { box.hidden = true; return; }
    box.hidden = false;
    box.appendChild(el("div", T.sources, "muted"));
    const ol = el("ol");
    view.sources.forEach((s) => {
      const li = el("li");
      li.dataset.n = String(s.n);
      li.value = s.n;
      if (s.redacted) {  // nothing of it is sent: no title, no place, no text
        li.classList.add("redacted");
        li.appendChild(el("span", T.sourceHidden, "muted src-title"));
        ol.appendChild(li);
        return;
      }
      if (view.cited.has(s.n)) li.classList.add("cited");
      const doc = s.document || {};
      const title = el(webLink(doc.source_url) ? "a" : "span", doc.title || doc.source_name || T.document(doc.id), "src-title");
      if (title.tagName === "A") {  // a source's document links to its original (sources/)
        title.href = doc.source_url;
        title.target = "_blank";
        title.rel = "noopener noreferrer";
      }
      li.appendChild(title);
      const where = [];
      const path = (s.section_path || []).filter((p) => p && p !== doc.title);
      if (path.length) where.push(path.join(" › "));
      const pages = pagesLabel(s.pages);
      if (pages) where.push(pages);
      if (doc.source_name && doc.source_name !== doc.title) where.push(doc.source_name);
      if (where.length) li.appendChild(el("span", " · " + where.join(" · "), "muted src-where"));
      const rel = s.scores && typeof s.scores.relevance === "number" ? s.scores.relevance : null;
      if (rel !== null) li.appendChild(el("span", T.relevance(rel.toFixed(2)), "muted"));
      li.appendChild(window.zhikuRich.render(s.content || "", el("div", null, "snippet")));
      ol.appendChild(li);
    });
    box.appendChild(ol);
  }
  function flashSource(view, n) {
    const li = view.sourcesBox.querySelector('li[data-n="' + n + '"]');
    if (!li) return;
    li.classList.add("flash");
    li.scrollIntoView({ block: "nearest" });
    setTimeout(() => li.classList.remove("flash"), 1200);
  }
  // The verdict (answered / uncertain / not found) as a badge above the answer, and the whole message styled by it;
  // `by` ("retrieval", "llm" or "faq") says who decided when it was not retrieval alone.
  function setVerdict(view, verdict, by) {
    view.root.classList.remove("verdict-answered", "verdict-uncertain", "verdict-not_found");
    const badge = window.zhikuVerdict.badge(verdict);
    if (!badge) { view.verdict.hidden = true; view.verdict.replaceChildren(); delete view.root.dataset.verdict; return; }
    view.root.classList.add("verdict-" + verdict);
    view.root.dataset.verdict = verdict;
    view.verdict.replaceChildren(badge);
    if (T.verdictBy[by]) view.verdict.appendChild(el("span", T.verdictBy[by], "muted verdict-by"));
    view.verdict.hidden = false;
  }
  function renderMeta(view, info) {
    const parts = [];
    if (info.mode === "extractive") parts.push(T.extractive);
    if (typeof info.confidence === "number" && info.hit) parts.push(T.confidence(info.confidence.toFixed(2)));
    const t = info.timings || {};
    if (typeof t.first_token_ms === "number") parts.push(T.firstToken(Math.round(t.first_token_ms)));
    if (typeof t.total_ms === "number") parts.push(T.total(Math.round(t.total_ms)));
    if (info.status && info.status !== "complete") parts.push(T.status(info.status));
    view.meta.textContent = parts.join(" · ");
  }
  function renderFeedback(view, current) {
    const box = view.feedback;
    box.replaceChildren();
    if (!view.id) return;
    const up = el("button", T.useful), down = el("button", T.notUseful);
    up.type = down.type = "button";
    up.dataset.rating = "up"; down.dataset.rating = "down";
    if (current && current.rating === "up") up.classList.add("chosen");
    if (current && current.rating === "down") down.classList.add("chosen");
    up.addEventListener("click", () => sendFeedback(view, "up", ""));
    down.addEventListener("click", () => {
      if (box.querySelector("input")) return;
      const reason = el("input"); reason.type = "text"; reason.maxLength = 2000; reason.placeholder = T.whatWrong;
      // "The cited passage is wrong" teaches the KB (a label for its review queue: docs/relevance.md).
      const wrong = el("input"); wrong.type = "checkbox"; wrong.className = "wrong-passage";
      const wrongLabel = el("label", null, "small"); wrongLabel.append(wrong, " " + T.wrongPassage);
      const submit = el("button", T.submit, "send-feedback"); submit.type = "button";
      const send = () => sendFeedback(view, "down", reason.value, wrong.checked ? "wrong_passage" : "");
      submit.addEventListener("click", send);
      reason.addEventListener("keydown", (e) => { if (e.key === "Enter" && !e.isComposing) { e.preventDefault(); send(); } });
      box.appendChild(reason); box.appendChild(wrongLabel); box.appendChild(submit); reason.focus();
    });
    box.appendChild(up); box.appendChild(down);
  }
  async function sendFeedback(view, rating, reason, reasonCode) {
    const body = reasonCode ? { rating, reason, reason_code: reasonCode } : { rating, reason };
    const res = await api("/api/messages/" + view.id + "/feedback/", { method: "POST", body: JSON.stringify(body) });
    if (!res.ok) { setStatus(T.feedbackFailed); return; }
    const saved = await res.json();
    if (rating === "up" && view.feedback.querySelector("input[type=text]")) {
      // A 👎 form opened while this 👍 was on its way stays open: its own sending thanks it.
      view.feedback.querySelectorAll("button[data-rating]").forEach((b) => b.classList.toggle("chosen", b.dataset.rating === "up"));
      return;
    }
    renderFeedback(view, saved);
    view.feedback.appendChild(thanks(saved));
  }
  // The thanks under a sent vote, saying what it taught: a label confirmed at once (an editor's vote) or waiting in
  // the KB's review queue (a viewer's).
  function thanks(saved) {
    const box = el("div", null, "feedback-thanks");
    box.setAttribute("role", "status");
    box.appendChild(el("strong", saved.rating === "up" ? T.thanksUp : T.thanksDown));
    const label = saved.labelled;
    if (label) box.appendChild(el("div", label.status === "confirmed" ? (saved.rating === "up" ? T.taughtUp : T.taughtWrong) : T.queued));
    box.dataset.labelled = label ? label.status : "";
    return box;
  }
  function showError(view, text) { view.error.hidden = false; view.error.textContent = text; }

  // --- protocol events -------------------------------------------------------------
  function handleEvent(ev) {
    const view = state.current;
    if (!ev || !ev.type) return;
    if (!view) { if (ev.type === "error") setStatus(ev.message || ev.code); return; }
    switch (ev.type) {
      case "start":
        state.conversation = ev.conversation;
        view.id = ev.message;
        setStatus(T.searching);
        loadConversations();
        break;
      case "rewrite":
        if (ev.method && ev.method !== "none") { view.rewrite.hidden = false; view.rewrite.textContent = T.searchedFor(ev.query); }
        break;
      case "sources":
        view.sources = ev.sources || [];
        setVerdict(view, ev.verdict, "retrieval");  // retrieval's; finish has the final one
        renderSources(view);
        setStatus(ev.hit ? T.answering : T.nothingFound);
        break;
      case "token":
        view.text += ev.text;
        scheduleRender(view);
        break;
      case "finish":
        view.text = ev.answer;
        view.cited = new Set((ev.citations || []).map((c) => c.n));
        setVerdict(view, ev.verdict, ev.verdict_by);
        renderAnswer(view); renderSources(view); renderMeta(view, ev); renderFeedback(view, null);
        done("");
        break;
      case "error":
        if (typeof ev.partial === "string" && ev.partial) { view.text = ev.partial; renderAnswer(view); }
        showError(view, (ev.code === "cancelled" ? T.stopped : T.failed) + (ev.message || ev.code) + " (" + ev.code + ")");
        renderMeta(view, { status: ev.status });
        done("");
        break;
    }
  }
  function done(text) {
    state.current = null; state.abort = null;
    sendButton.disabled = false; stopButton.hidden = true;
    setStatus(text);
  }

  // --- transports: websocket, else SSE over fetch -----------------------------------
  function connect() {
    if (state.useSSE) return;
    const ws = new WebSocket((location.protocol === "https:" ? "wss://" : "ws://") + location.host + "/ws/chat/");
    state.ws = ws;
    let opened = false;
    ws.onopen = () => { opened = true; state.wsFailures = 0; if (state.queued) { ws.send(state.queued); state.queued = null; } };
    ws.onmessage = (m) => { try { handleEvent(JSON.parse(m.data)); } catch (e) { console.error(e); } };
    ws.onclose = () => {
      state.ws = null;
      if (state.current) { showError(state.current, T.connectionLost); done(""); }
      if (!opened && ++state.wsFailures >= 2) { state.useSSE = true; return; } // websockets blocked: use SSE
      setTimeout(connect, Math.min(5000, 500 * (state.wsFailures + 1)));
    };
  }
  function sendAsk(payload) {
    if (!state.useSSE) {
      const text = JSON.stringify(Object.assign({ type: "ask" }, payload));
      if (state.ws && state.ws.readyState === WebSocket.OPEN) state.ws.send(text);
      else { state.queued = text; if (!state.ws) connect(); }
      return;
    }
    streamSSE(payload);
  }
  async function streamSSE(payload) {
    const controller = new AbortController();
    state.abort = controller;
    let res;
    try {
      res = await fetch("/api/chat/stream/", {
        method: "POST", signal: controller.signal, credentials: "same-origin",
        headers: { "Content-Type": "application/json", "X-CSRFToken": csrf, Accept: "text/event-stream" },
        body: JSON.stringify(payload),
      });
    } catch (e) { if (state.current) { showError(state.current, T.requestFailed); done(""); } return; }
    if (!res.ok) {
      let body = {}; try { body = await res.json(); } catch (e) { /* not JSON */ }
      handleEvent(Object.assign({ type: "error" }, body.error || { code: "http_" + res.status, message: res.statusText }));
      return;
    }
    const reader = res.body.getReader();
    const decoder = new TextDecoder();
    let buffer = "";
    try {
      for (;;) {
        const { value, done: end } = await reader.read();
        if (end) break;
        buffer += decoder.decode(value, { stream: true });
        let cut;
        while ((cut = buffer.indexOf("\n\n")) >= 0) {
          const frame = buffer.slice(0, cut); buffer = buffer.slice(cut + 2);
          const data = frame.split("\n").filter((l) => l.startsWith("data:")).map((l) => l.slice(5).trim()).join("\n");
          if (data) handleEvent(JSON.parse(data));
        }
      }
    } catch (e) {
      if (state.current) { showError(state.current, controller.signal.aborted ? T.stopped : T.connectionLost); done(""); }
    }
  }
  function cancel() {
    if (!state.current) return;
    if (state.abort) state.abort.abort();
    else if (state.ws && state.ws.readyState === WebSocket.OPEN) state.ws.send(JSON.stringify({ type: "cancel" }));
  }

  // --- REST: conversations -----------------------------------------------------------
  function api(url, options) {
    const opts = Object.assign({ credentials: "same-origin" }, options || {});
    opts.headers = Object.assign({ "Content-Type": "application/json", "X-CSRFToken": csrf }, opts.headers || {});
    return fetch(url, opts);
  }
  // The list, searched by the box above it (GET /api/conversations/?q=: titles, questions and answers); the
  // newest request wins, so a slow answer to an earlier keystroke never replaces a later one.
  let listRequest = 0;
  async function loadConversations() {
    const q = searchBox.value.trim();
    const mine = ++listRequest;
    const res = await api("/api/conversations/?page_size=100" + (q ? "&q=" + encodeURIComponent(q) : ""));
    if (mine !== listRequest) return;
    const failed = $("conversations-error");
    if (!res.ok) {
      // A search the API refuses (400 with its message, e.g. invalid characters) is said, the old list kept.
      let body = {}; try { body = await res.json(); } catch (e) { /* not JSON: the status says it */ }
      failed.textContent = (body.error && body.error.message) || T.requestFailed + " (" + res.status + ")";
      failed.hidden = false;
      return;
    }
    failed.hidden = true;
    const data = await res.json();
    const list = $("conversations");
    list.replaceChildren();
    $("conversations-empty").hidden = data.results.length > 0 || Boolean(q);
    $("conversations-no-match").hidden = data.results.length > 0 || !q;
    data.results.forEach((c) => {
      const li = el("li");
      li.dataset.conversation = String(c.id);
      if (c.id === state.conversation) li.classList.add("active");
      const open = el("button", c.title || T.conversation(c.id), "open");
      open.type = "button"; open.title = c.title || "";
      open.addEventListener("click", () => openConversation(c.id));
      const rename = el("button", "✎", "rename");
      rename.type = "button"; rename.title = T.rename; rename.setAttribute("aria-label", T.rename);
      rename.addEventListener("click", () => renameInline(li, open, c));
      const del = el("button", "×", "delete");
      del.type = "button"; del.title = T.remove;
      del.addEventListener("click", async () => {
        if (!window.confirm(T.confirmRemove)) return;
        const r = await api("/api/conversations/" + c.id + "/", { method: "DELETE" });
        if (r.ok && state.conversation === c.id) newChat();
        loadConversations();
      });
      li.appendChild(open); li.appendChild(rename); li.appendChild(del);
      list.appendChild(li);
    });
  }
  // Rename in place: the title becomes a text box; Enter (or leaving it) saves with PATCH, Escape keeps the old
  // title. A refused title (blank, too long: the API's 400) stays in the box with the API's message under it.
  function renameInline(li, open, c) {
    if (li.querySelector("input")) return;
    const input = el("input", null, "rename-input");
    input.type = "text"; input.maxLength = 200; input.value = c.title || ""; input.setAttribute("aria-label", T.rename);
    const error = el("div", null, "rename-error");
    error.hidden = true; error.setAttribute("role", "alert");
    open.hidden = true;
    li.classList.add("renaming");
    li.insertBefore(input, open);
    li.appendChild(error);
    input.focus(); input.select();
    // busy while the PATCH is out; done once settled (the list's rebuild blurs the box: that blur must not save).
    let busy = false, done = false;
    const finish = async (save) => {
      if (busy || done) return;
      const title = input.value.trim();
      if (!save || title === (c.title || "")) { done = true; loadConversations(); return; }
      busy = true;
      const res = await api("/api/conversations/" + c.id + "/", { method: "PATCH", body: JSON.stringify({ title }) });
      busy = false;
      if (res.ok) { done = true; loadConversations(); return; }
      let body = {}; try { body = await res.json(); } catch (e) { /* not JSON: the status says it */ }
      error.textContent = T.renameFailed + ((body.error && body.error.message) || res.status);
      error.hidden = false;
    };
    input.addEventListener("keydown", (e) => {
      if (e.key === "Enter" && !e.isComposing) { e.preventDefault(); finish(true); }
      else if (e.key === "Escape") { e.preventDefault(); finish(false); }
    });
    input.addEventListener("blur", () => { if (error.hidden) finish(true); });
  }
  async function openConversation(id) {
    if (state.current) return;
    showSide(false);
    const res = await api("/api/conversations/" + id + "/");
    if (!res.ok) { setStatus(T.cannotOpen); return; }
    const data = await res.json();
    state.conversation = data.id;
    messagesBox.replaceChildren();
    setKbs(data.kb_ids || []);
    let rewritten = "";
    data.messages.forEach((m) => {
      if (m.role === "user") {
        userBubble(m.content);
        rewritten = m.rewritten_query && m.rewritten_query !== m.content ? m.rewritten_query : "";
        return;
      }
      const view = assistantView();
      if (rewritten) { view.rewrite.hidden = false; view.rewrite.textContent = T.searchedFor(rewritten); }
      view.id = m.id;
      view.text = m.content;
      view.sources = m.sources || [];
      view.cited = new Set((m.citations || []).map((c) => c.n));
      renderAnswer(view); renderSources(view);
      if (m.content_redacted) view.answer.replaceChildren(el("p", T.answerHidden, "muted redacted-note"));
      setVerdict(view, m.verdict, m.not_found_by === "llm" ? "llm" : m.answer_mode === "faq" ? "faq" : "retrieval");
      renderMeta(view, { mode: m.answer_mode, hit: m.hit, not_found_by: m.not_found_by, confidence: m.confidence, timings: m.timings, status: m.status });
      if (m.error_code && m.status !== "complete") showError(view, T.incomplete(m.error_code));
      renderFeedback(view, m.feedback);
    });
    scrollDown();  // the latest exchange in sight, just above the question box
    loadConversations();
  }
  function setKbs(ids) {
    if (!ids.length) return;
    document.querySelectorAll('#kb-list input[name="kb"]').forEach((box) => { box.checked = ids.includes(Number(box.value)); });
  }
  function newChat() {
    if (state.current) return;
    showSide(false);
    state.conversation = null;
    messagesBox.replaceChildren();
    loadConversations();
    questionInput.focus();
  }

  // --- asking ------------------------------------------------------------------------
  function ask() {
    const question = questionInput.value.trim();
    if (!question || state.current) return;
    const kbIds = Array.from(document.querySelectorAll('#kb-list input[name="kb"]:checked')).map((b) => Number(b.value));
    if (!kbIds.length) { setStatus(T.chooseKb); showSide(true); return; }
    userBubble(question);
    state.current = assistantView();
    questionInput.value = "";
    sendButton.disabled = true; stopButton.hidden = false;
    setStatus(T.sending);
    scrollDown();
    sendAsk({ conversation: state.conversation, kb_ids: kbIds, question });
  }

  // The ticked KBs are the person's choice, kept server-side (accounts/preferences.py) for the next visit, on any
  // browser; a past conversation's KBs (setKbs) tick the boxes without changing it.
  let keepTimer = null;
  $("kb-list").addEventListener("change", () => {
    clearTimeout(keepTimer);
    keepTimer = setTimeout(() => {
      const ids = Array.from(document.querySelectorAll('#kb-list input[name="kb"]:checked')).map((b) => Number(b.value));
      fetch("/api/account/preferences/", {
        method: "PUT", credentials: "same-origin", body: JSON.stringify({ chat_kb_ids: ids }),
        headers: { "Content-Type": "application/json", "X-CSRFToken": csrf },
      }).then((r) => { $("kb-list").dataset.kept = r.ok ? "1" : ""; }).catch(() => { $("kb-list").dataset.kept = ""; });
    }, 300);
  });
  form.addEventListener("submit", (e) => { e.preventDefault(); ask(); });
  questionInput.addEventListener("keydown", (e) => {
    if (e.key === "Enter" && !e.shiftKey && !e.isComposing) { e.preventDefault(); ask(); }
  });
  stopButton.addEventListener("click", cancel);
  $("new-chat").addEventListener("click", newChat);
  let searchTimer = null;
  searchBox.addEventListener("input", () => { clearTimeout(searchTimer); searchTimer = setTimeout(loadConversations, 250); });

  // On a phone (chat.css, under 760px) the side panel folds behind a button and the question box is fixed to the
  // bottom of the screen; the page keeps room for the box under the history (--ask-height), whatever its height.
  function showSide(open) {
    chatBox.classList.toggle("side-open", open);
    $("side-toggle").setAttribute("aria-expanded", open ? "true" : "false");
  }
  $("side-toggle").addEventListener("click", () => showSide(!chatBox.classList.contains("side-open")));
  const keepRoom = () => document.documentElement.style.setProperty("--ask-height", form.offsetHeight + "px");
  if (window.ResizeObserver) new ResizeObserver(keepRoom).observe(form);
  keepRoom();
  connect();
  loadConversations();
})();
