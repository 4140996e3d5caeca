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
    chunks: (n) => fmt(ngettext("%(n)s chunk", "%(n)s chunks", n), { n }),
    progress: (done, total) => (total ? `${done} / ${total}` : gettext("Parsing")),
    restricted: (groups) => fmt(gettext("Only: %(groups)s"), { groups: groups.join(gettext(", ")) }),
    retry: gettext("Retry"), reindex: gettext("Re-index"), remove: gettext("Delete"),
    confirmDelete: (name) => fmt(gettext("Delete the document “%(name)s” and all its chunks? This cannot be undone."), { name }),
    uploading: (n) => fmt(ngettext("Uploading %(n)s file…", "Uploading %(n)s files…", n), { n }),
    uploaded: gettext("Uploaded: "),
    unchanged: gettext("content unchanged, the existing version is kept"),
    followBelow: gettext(". Follow the processing in the document list below."),
    uploadFailed: gettext("Upload failed: "),
    actionFailed: gettext("Action failed: "),
    searching: gettext("Searching…"),
    noResults: gettext("Nothing relevant was found."),
    belowThreshold: (r, t) => fmt(gettext("Relevance %(relevance)s is below the threshold %(threshold)s, so the answer would be “not found”. The closest passages:"), { relevance: r, threshold: t }),
    hit: (n) => fmt(ngettext("%(n)s result", "%(n)s results", n), { n }),
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

  function progressCell(doc) {
    const td = el("td");
    if (doc.status === "processing") {
      const bar = el("progress", null, { max: String(doc.progress.total || 1), value: String(doc.progress.done) });
      td.append(bar, " ", el("span", T.progress(doc.progress.done, doc.progress.total), { class: "small muted" }));
    } else if (doc.status === "pending") {
      td.append(el("span", T.queued, { class: "muted small" }));
    } else if (doc.status === "ready") {
      td.append(el("span", T.chunks(doc.progress.total), { class: "small" }));
    } else if (doc.status === "failed" && doc.error) {
      td.append(el("div", doc.error.message || doc.error.code, { class: "error-text small doc-error" }));
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

  // --- upload ------------------------------------------------------------------

  async function upload(files) {
    if (!files || !files.length) return;
    const status = document.getElementById("upload-status");
    const form = new FormData();
    Array.from(files).forEach((f) => form.append("files", f, f.name));
    const groups = document.getElementById("restricted-groups").value.trim();
    if (groups) form.append("restricted_to_groups", groups);
    status.className = "small muted";
    status.textContent = T.uploading(files.length);
    try {
      const data = await api("POST", `${base}/documents/`, form);
      status.className = "small";
      status.textContent = T.uploaded + data.documents.map((d) => d.source_name + (d.unchanged ? `（${T.unchanged}）` : "")).join("，")
        + T.followBelow;
    } catch (e) {
      status.className = "small error-text";
      status.textContent = T.uploadFailed + errorText(e);
    }
    page = 1;
    load();
  }

  if (canEdit) {
    const input = document.getElementById("file-input");
    const zone = document.getElementById("dropzone");
    input.addEventListener("change", () => { const files = Array.from(input.files); input.value = ""; upload(files); });
    ["dragenter", "dragover"].forEach((type) => zone.addEventListener(type, (e) => { e.preventDefault(); zone.classList.add("over"); }));
    ["dragleave", "drop"].forEach((type) => zone.addEventListener(type, () => zone.classList.remove("over")));
    zone.addEventListener("drop", (e) => { e.preventDefault(); upload(e.dataTransfer.files); });
  }

  // --- search ------------------------------------------------------------------

  function result(r) {
    const box = el("div", null, { class: "result" });
    const meta = el("div", null, { class: "meta" });
    meta.append(el("a", r.document.title || r.document.source_name, { href: `/kbs/${kbId}/documents/${r.document.id}/` }));
    if (r.section_path && r.section_path.length) meta.append(el("span", sectionPath(r.section_path), { class: "section-path" }));
    const p = pages(r.pages.start, r.pages.end);
    if (p) meta.append(el("span", p));
    meta.append(el("span", T.relevance(fix(r.scores.relevance))));
    box.append(meta, el("div", r.content, { class: "text" }));
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
    let data;
    try {
      data = await api("POST", "/api/search/", { query, kb_ids: [parseInt(kbId, 10)] });
    } catch (e) {
      status.className = "small error-text";
      status.textContent = errorText(e);
      return;
    }
    if (!data.results.length) status.textContent = T.noResults;
    else status.textContent = data.hit ? T.hit(data.results.length) : T.belowThreshold(fix(data.relevance), fix(data.threshold));
    out.replaceChildren(...data.results.map(result));
  });

  load();
})();
