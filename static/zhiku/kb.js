// The KB page: documents with live status (polls the API while any is pending or processing),
// upload by file input or drag and drop, retry / re-index / delete, search within the KB.
(function () {
  "use strict";
  const { api, errorText, el, button, formatTime, statusBadge, sectionPath, pages } = window.zhiku;
  // Visible strings: translated by Django's JavaScript catalogue (/jsi18n/, docs/i18n.md).
  const fmt = (text, values) => interpolate(text, values, true);
  const T = {
    loading: gettext("Loading…"),
    noDocuments: gettext("No documents yet."),
    noMatching: gettext("No documents match."),
    total: (n) => fmt(ngettext("%(n)s document", "%(n)s documents", n), { n }),
    pageOf: (p, n) => fmt(gettext("Page %(page)s of %(pages)s"), { page: p, pages: n }),
    queued: gettext("Queued"),
    place: (n) => fmt(gettext("No. %(n)s in the queue"), { n }),
    placeBehind: (n) => fmt(gettext("No. %(n)s in the background queue, after uploads"), { n }),
    readyIn: (text) => fmt(gettext("ready in about %(time)s"), { time: text }),
    seconds: (n) => fmt(ngettext("%(n)s second", "%(n)s seconds", n), { n }),
    minutes: (n) => fmt(ngettext("%(n)s minute", "%(n)s minutes", n), { n }),
    hours: (n) => fmt(ngettext("%(n)s hour", "%(n)s hours", n), { n }),
    chunks: (n) => fmt(ngettext("%(n)s chunk", "%(n)s chunks", n), { n }),
    progress: (done, total) => (total ? `${done} / ${total}` : gettext("Parsing")),
    ocrPages: (done, total) => fmt(gettext("Reading scanned pages (OCR): %(done)s / %(total)s"), { done, total }),
    restricted: (groups) => fmt(gettext("Only: %(groups)s"), { groups: groups.join(gettext(", ")) }),
    retry: gettext("Retry"), reindex: gettext("Re-index"), remove: gettext("Delete"),
    confirmDelete: (name) => fmt(gettext("Delete the document “%(name)s” and all its chunks? This cannot be undone."), { name }),
    uploading: (n) => fmt(ngettext("Uploading %(n)s file…", "Uploading %(n)s files…", n), { n }),
    uploadedCount: (ok, n) => fmt(gettext("Uploaded %(ok)s of %(n)s"), { ok, n }),
    uploadedOne: gettext("Uploaded; processing follows in the document list"),
    uploadedUnchanged: gettext("Uploaded: content unchanged, the existing version is kept"),
    followBelow: gettext(". Follow the processing in the document list below."),
    uploadFailed: gettext("Upload failed: "),
    waiting: gettext("Waiting to be uploaded"),
    sending: (pct) => `${gettext("Sending…")} ${pct}%`,
    preview: gettext("Preview chunks"),
    removeFile: gettext("Remove"),
    previewOf: (name) => fmt(gettext("How “%(name)s” will be split"), { name }),
    previewing: gettext("Splitting…"),
    previewFailed: gettext("Preview failed: "),
    previewSummary: (d) => fmt(gettext("%(count)s chunks with chunk size %(size)s and overlap %(overlap)s; %(total)s characters, the longest chunk %(longest)s. Change the settings above and preview again, or upload."),
      { count: d.count, size: d.chunk_size, overlap: d.chunk_overlap, total: d.total_chars, longest: d.longest }),
    previewTruncated: (n) => fmt(gettext(" Only the first %(n)s are shown."), { n }),
    chars: (n) => fmt(gettext("%(n)s characters"), { n }),
    actionFailed: gettext("Action failed: "),
    searching: gettext("Searching…"),
    noResults: gettext("Nothing relevant was found."),
    // What each verdict means for this search, with the KB's two lines (static/zhiku/verdict.js has the words).
    said: {
      answered: (n, r, g, l) => fmt(ngettext("%(n)s result; relevance %(relevance)s reaches the confidence line %(line)s.",
        "%(n)s results; relevance %(relevance)s reaches the confidence line %(line)s.", n), { n, relevance: r, gate: g, line: l }),
      uncertain: (n, r, g, l) => fmt(gettext("Relevance %(relevance)s is between the not-found gate %(gate)s and the confidence line %(line)s: the passages below are the best found, and may not answer the question."),
        { n, relevance: r, gate: g, line: l }),
      not_found: (n, r, g) => fmt(gettext("Relevance %(relevance)s is below the not-found gate %(gate)s, so the answer would be “not found”. The closest passages:"),
        { n, relevance: r, gate: g }),
    },
    relevance: (v) => fmt(gettext("relevance %(value)s"), { value: v }),
  };

  const root = document.getElementById("kb-page");
  const kbId = root.dataset.kbId;
  const canEdit = root.dataset.canEdit === "1";
  const base = `/api/kbs/${kbId}`;
  const rows = document.getElementById("doc-rows");
  const summary = document.getElementById("doc-summary");
  const filter = document.getElementById("status-filter");
  const pager = document.getElementById("doc-pager");
  const PAGE_SIZE = 50;
  const POLL_MS = 1500;
  let page = 1;
  let timer = null;
  let loading = false;

  function fix(v) { return typeof v === "number" ? v.toFixed(2) : "—"; }

  // --- documents ------------------------------------------------------------

  // A waiting document: its place and, once the KB (or the site) has a pace, when it should be ready.
  function duration(seconds) {
    if (seconds < 60) return T.seconds(Math.max(1, Math.round(seconds / 5) * 5 || 1));
    if (seconds < 3600) return T.minutes(Math.round(seconds / 60));
    return T.hours(Math.round(seconds / 360) / 10);
  }

  function queueText(queue) {
    if (!queue) return T.queued;
    const parts = [T.queued, queue.background ? T.placeBehind(queue.position) : T.place(queue.position)];
    if (queue.eta_seconds !== null && queue.eta_seconds !== undefined) parts.push(T.readyIn(duration(queue.eta_seconds)));
    return parts.join(" · ");
  }

  function progressCell(doc) {
    const td = el("td");
    if (doc.status === "processing") {
      const bar = el("progress", null, { max: String(doc.progress.total || 1), value: String(doc.progress.done) });
      const words = doc.progress.unit === "pages" ? T.ocrPages : T.progress;
      td.append(bar, " ", el("span", words(doc.progress.done, doc.progress.total), { class: "small muted" }));
    } else if (doc.status === "pending") {
      td.append(el("span", queueText(doc.queue), { class: "muted small doc-queue" }));
    } else if (doc.status === "ready") {
      td.append(el("span", T.chunks(doc.progress.total), { class: "small" }));
    } else if (doc.status === "failed" && doc.error) {
      // The message is in the viewer's language (from the code); the stored technical detail shows on hover.
      td.append(el("div", doc.error.message || doc.error.code, { class: "error-text small doc-error", title: doc.error.detail || "" }));
    }
    return td;
  }

  async function act(doc, what) {
    try {
      if (what === "delete") {
        if (!window.confirm(T.confirmDelete(doc.title || doc.source_name))) return;
        await api("DELETE", `${base}/documents/${doc.id}/`);
      } else {
        await api("POST", `${base}/documents/${doc.id}/${what}/`);
      }
    } catch (e) {
      window.alert(T.actionFailed + errorText(e));
    }
    load();
  }

  function row(doc) {
    const tr = el("tr", null, { "data-doc-id": String(doc.id), "data-status": doc.status });
    const name = el("td");
    name.append(el("a", doc.title || doc.source_name, { href: `/kbs/${kbId}/documents/${doc.id}/`, class: "doc-link" }));
    if (doc.title && doc.title !== doc.source_name) name.append(el("div", doc.source_name, { class: "muted small" }));
    if (webLink(doc.source_url)) {
      const from = el("div", null, { class: "small" });
      from.append(sourceLink(doc.source_url));
      name.append(from);
    }
    if (doc.restricted_to_groups && doc.restricted_to_groups.length) {
      name.append(el("div", T.restricted(doc.restricted_to_groups), { class: "muted small" }));
    }
    const status = el("td", null, { class: "nowrap doc-status" });
    status.append(statusBadge(doc.status));
    tr.append(name, status, progressCell(doc), el("td", "v" + doc.version, { class: "num" }),
      el("td", formatTime(doc.updated_at), { class: "nowrap small" }));
    if (canEdit) {
      const actions = el("td", null, { class: "actions" });
      if (doc.status === "failed") actions.append(button(T.retry, () => act(doc, "retry"), "retry"));
      if (doc.status === "ready" || doc.status === "failed") actions.append(button(T.reindex, () => act(doc, "reindex"), "reindex"));
      actions.append(button(T.remove, () => act(doc, "delete"), "danger delete"));
      tr.append(actions);
    }
    return tr;
  }

  async function load() {
    if (loading) return;
    loading = true;
    clearTimeout(timer);
    let data;
    try {
      const params = new URLSearchParams({ page: String(page), page_size: String(PAGE_SIZE) });
      if (filter.value) params.set("status", filter.value);
      data = await api("GET", `${base}/documents/?${params}`);
    } catch (e) {
      if (e.status === 404 && page > 1) { page = 1; loading = false; return load(); }
      summary.textContent = errorText(e);
      loading = false;
      timer = setTimeout(load, POLL_MS * 4);
      return;
    }
    loading = false;
    const cols = canEdit ? 6 : 5;
    if (data.results.length) {
      rows.replaceChildren(...data.results.map(row));
    } else {
      const empty = el("tr");
      empty.append(el("td", filter.value ? T.noMatching : T.noDocuments, { colspan: String(cols), class: "muted" }));
      rows.replaceChildren(empty);
    }
    summary.textContent = T.total(data.count);
    const pagesTotal = Math.max(1, Math.ceil(data.count / PAGE_SIZE));
    pager.hidden = pagesTotal <= 1;
    document.getElementById("doc-page").textContent = T.pageOf(page, pagesTotal);
    document.getElementById("doc-prev").disabled = !data.previous;
    document.getElementById("doc-next").disabled = !data.next;
    // Live progress: poll while anything on this page is still on its way.
    if (data.results.some((d) => d.status === "pending" || d.status === "processing")) timer = setTimeout(load, POLL_MS);
  }

  filter.addEventListener("change", () => { page = 1; load(); });
  document.getElementById("doc-prev").addEventListener("click", () => { page = Math.max(1, page - 1); load(); });
  document.getElementById("doc-next").addEventListener("click", () => { page += 1; load(); });

  // --- upload: files are listed first, can be previewed, then uploaded one request each ------------
  // Each file is its own request (XMLHttpRequest, whose upload reports progress), so every file shows
  // how much of it has been sent, and a refused file is reported on its own line without stopping the rest.

  const queue = [];  // {file, li, state: "waiting" | "uploading" | "done" | "failed"}

  function sizeText(bytes) {
    if (bytes < 1024) return fmt(gettext("%(n)s B"), { n: bytes });
    if (bytes < 1024 * 1024) return fmt(gettext("%(n)s KB"), { n: (bytes / 1024).toFixed(1) });
    return fmt(gettext("%(n)s MB"), { n: (bytes / 1024 / 1024).toFixed(1) });
  }

  function chunkingFields() {
    return { chunk_size: document.getElementById("chunk-size").value.trim(), chunk_overlap: document.getElementById("chunk-overlap").value.trim() };
  }

  function setItem(item, state, text, cls) {
    item.state = state;
    item.li.dataset.state = state;
    const line = item.li.querySelector(".upload-state");
    line.className = "upload-state small " + (cls || "muted");
    line.textContent = text;
    item.li.querySelectorAll("button").forEach((b) => { b.disabled = state === "uploading" || state === "done"; });
  }

  function renderQueue() {
    const list = document.getElementById("upload-queue");
    list.hidden = !queue.length;
    document.getElementById("upload-actions").hidden = !queue.some((i) => i.state === "waiting" || i.state === "failed");
  }

  function stage(files) {
    const list = document.getElementById("upload-queue");
    Array.from(files || []).forEach((file) => {
      const old = queue.findIndex((i) => i.file.name === file.name && i.state !== "done");
      if (old >= 0) { queue[old].li.remove(); queue.splice(old, 1); }
      const li = el("li", null, { class: "upload-item", "data-name": file.name });
      const head = el("div", null, { class: "row" });
      head.append(el("span", file.name, { class: "upload-name" }), el("span", sizeText(file.size), { class: "muted small" }));
      const item = { file, li, state: "waiting" };
      const tools = el("span", null, { class: "upload-tools" });
      tools.append(button(T.preview, () => preview(item), "preview"), button(T.removeFile, () => {
        li.remove(); queue.splice(queue.indexOf(item), 1); renderQueue();
      }, "remove"));
      head.append(tools);
      const bar = el("progress", null, { max: String(Math.max(file.size, 1)), value: "0", class: "upload-progress" });
      li.append(head, bar, el("div", null, { class: "upload-state small muted" }));
      list.append(li);
      queue.push(item);
      setItem(item, "waiting", T.waiting);
    });
    renderQueue();
  }

  // One file, one multipart request; resolves to the API's answer, rejects with an ApiError.
  function send(item) {
    return new Promise((resolve, reject) => {
      const form = new FormData();
      form.append("files", item.file, item.file.name);
      const groups = document.getElementById("restricted-groups").value.trim();
      if (groups) form.append("restricted_to_groups", groups);
      const chunking = chunkingFields();
      if (chunking.chunk_size) form.append("chunk_size", chunking.chunk_size);
      if (chunking.chunk_overlap) form.append("chunk_overlap", chunking.chunk_overlap);
      const xhr = new XMLHttpRequest();
      xhr.open("POST", `${base}/documents/`);
      xhr.setRequestHeader("X-CSRFToken", window.zhiku.csrfToken());
      xhr.setRequestHeader("Accept", "application/json");
      const bar = item.li.querySelector("progress");
      xhr.upload.addEventListener("progress", (e) => {
        const total = e.lengthComputable ? e.total : item.file.size;
        bar.max = Math.max(total, 1);
        bar.value = e.loaded;
        item.li.dataset.sent = String(e.loaded);
        setItem(item, "uploading", T.sending(total ? Math.min(100, Math.round((100 * e.loaded) / total)) : 0));
      });
      xhr.addEventListener("load", () => {
        let data = null;
        try { data = JSON.parse(xhr.responseText); } catch (e) { data = null; }
        if (xhr.status >= 200 && xhr.status < 300) resolve(data);
        else reject(window.zhiku.apiError(xhr.status, data));
      });
      xhr.addEventListener("error", () => reject(window.zhiku.apiError(0, null)));
      xhr.send(form);
    });
  }

  async function uploadAll() {
    const todo = queue.filter((i) => i.state === "waiting" || i.state === "failed");
    if (!todo.length) return;
    const status = document.getElementById("upload-status");
    status.className = "small muted";
    status.textContent = T.uploading(todo.length);
    document.getElementById("upload-submit").disabled = true;
    let ok = 0;
    for (const item of todo) {
      setItem(item, "uploading", T.sending(0));
      try {
        const data = await send(item);
        const d = data.documents[0];
        item.li.querySelector("progress").value = item.li.querySelector("progress").max;
        setItem(item, "done", d.unchanged ? T.uploadedUnchanged : T.uploadedOne, "ok-text");
        item.li.dataset.documentId = String(d.id);
        ok += 1;
      } catch (e) {
        setItem(item, "failed", T.uploadFailed + errorText(e), "error-text");
      }
      page = 1;
      load();
    }
    document.getElementById("upload-submit").disabled = false;
    status.className = ok === todo.length ? "small" : "small error-text";
    status.textContent = T.uploadedCount(ok, todo.length) + (ok ? T.followBelow : "");
    renderQueue();
  }

  function previewChunk(c) {
    const box = el("div", null, { class: "chunk preview-chunk" });
    const meta = el("div", null, { class: "meta" });
    meta.append(el("span", "#" + (c.ordinal + 1)));
    if (c.section_path.length) meta.append(el("span", sectionPath(c.section_path), { class: "section-path" }));
    const p = pages(c.page_start, c.page_end);
    if (p) meta.append(el("span", p));
    meta.append(el("span", T.chars(c.chars)));
    box.append(meta, window.zhikuRich.render(c.content, el("div", null, { class: "text" })));
    return box;
  }

  async function preview(item) {
    const box = document.getElementById("preview");
    const title = document.getElementById("preview-title");
    const summary = document.getElementById("preview-summary");
    const out = document.getElementById("preview-chunks");
    box.hidden = false;
    title.textContent = T.previewOf(item.file.name);
    summary.className = "small muted";
    summary.textContent = T.previewing;
    out.replaceChildren();
    const form = new FormData();
    form.append("file", item.file, item.file.name);
    const chunking = chunkingFields();
    if (chunking.chunk_size) form.append("chunk_size", chunking.chunk_size);
    if (chunking.chunk_overlap) form.append("chunk_overlap", chunking.chunk_overlap);
    let data;
    try {
      data = await api("POST", `${base}/documents/preview/`, form);
    } catch (e) {
      summary.className = "small error-text";
      summary.textContent = T.previewFailed + errorText(e);
      return;
    }
    box.dataset.count = String(data.count);
    // cut_short: the preview read only the start of the file (its budgets); the server words why.
    summary.textContent = T.previewSummary(data) + (data.truncated ? T.previewTruncated(data.chunks.length) : "")
      + (data.cut_short ? " " + data.cut_short.message : "");
    out.replaceChildren(...data.chunks.map(previewChunk));
    box.scrollIntoView({ block: "nearest" });
  }

  if (canEdit) {
    const input = document.getElementById("file-input");
    const zone = document.getElementById("dropzone");
    input.addEventListener("change", () => { const files = Array.from(input.files); input.value = ""; stage(files); });
    ["dragenter", "dragover"].forEach((type) => zone.addEventListener(type, (e) => { e.preventDefault(); zone.classList.add("over"); }));
    ["dragleave", "drop"].forEach((type) => zone.addEventListener(type, () => zone.classList.remove("over")));
    zone.addEventListener("drop", (e) => { e.preventDefault(); stage(e.dataTransfer.files); });
    document.getElementById("upload-submit").addEventListener("click", uploadAll);
    document.getElementById("upload-clear").addEventListener("click", () => {
      for (const item of queue.splice(0)) item.li.remove();
      document.getElementById("preview").hidden = true;
      renderQueue();
    });
  }

  // --- where a source's document came from (sources/) ------------------------------

  function webLink(url) {
    return typeof url === "string" && /^https?:\/\//i.test(url);
  }

  function sourceLink(url) {
    return el("a", url, { href: url, class: "source-url", target: "_blank", rel: "noopener noreferrer" });
  }

  // --- search ------------------------------------------------------------------

  function result(r) {
    const box = el("div", null, { class: "result" });
    const meta = el("div", null, { class: "meta" });
    meta.append(el("a", r.document.title || r.document.source_name, { href: `/kbs/${kbId}/documents/${r.document.id}/` }));
    if (webLink(r.document.source_url)) meta.append(sourceLink(r.document.source_url));
    if (r.section_path && r.section_path.length) meta.append(el("span", sectionPath(r.section_path), { class: "section-path" }));
    const p = pages(r.pages.start, r.pages.end);
    if (p) meta.append(el("span", p));
    meta.append(el("span", T.relevance(fix(r.scores.relevance))));
    box.append(meta, window.zhikuRich.render(r.content, el("div", null, { class: "text" })));
    return box;
  }

  document.getElementById("search-form").addEventListener("submit", async (event) => {
    event.preventDefault();
    const query = document.getElementById("search-query").value.trim();
    if (!query) return;
    const status = document.getElementById("search-status");
    const out = document.getElementById("search-results");
    status.hidden = false;
    status.className = "muted small";
    status.textContent = T.searching;
    out.replaceChildren();
    out.className = "result-list";
    let data;
    try {
      data = await api("POST", "/api/search/", { query, kb_ids: [parseInt(kbId, 10)] });
    } catch (e) {
      status.className = "small error-text";
      status.textContent = errorText(e);
      return;
    }
    const verdict = data.verdict || (data.hit ? "answered" : "not_found");
    status.className = "small search-verdict";
    status.replaceChildren(window.zhikuVerdict.badge(verdict), el("span", data.results.length
      ? T.said[verdict](data.results.length, fix(data.relevance), fix(data.threshold), fix(data.answer_threshold)) : T.noResults));
    out.className = "result-list verdict-" + verdict;
    out.replaceChildren(...data.results.map(result));
  });

  load();
})();
