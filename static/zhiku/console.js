// Shared helpers of the console pages (window.zhiku): calls to the REST API with the session cookie and
// the CSRF token, errors in words, small DOM helpers. Text goes in with textContent only, so nothing
// from documents, queries or names is ever parsed as HTML.
(function () {
  "use strict";
  // Visible strings in one place, to wrap for translation later.
  // Visible strings: translated by Django's JavaScript catalogue (/jsi18n/, docs/i18n.md).
  const T = {
    network: gettext("Network error; check the connection and retry."),
    codes: {
      role_required: gettext("Your role does not allow this."),
      permission_denied: gettext("Your role does not allow this."),
      not_authenticated: gettext("You are signed out; sign in again."),
      kb_not_found: gettext("The knowledge base does not exist or you cannot access it."),
      document_not_found: gettext("The document does not exist or you cannot access it."),
      chunk_not_found: gettext("The chunk does not exist or you cannot access it."),
      busy: gettext("The document is still being processed; try again later."),
      no_file: gettext("The original file is not stored, so it cannot be re-indexed."),
      file_too_large: gettext("The file is too large."),
      body_too_large: gettext("The request is too large."),
      unsupported_type: gettext("Unsupported file type."),
      unknown_group: gettext("No such group."),
      unknown_user: gettext("No such user."),
      throttled: gettext("Too many requests; try again later."),
    },
    statuses: { pending: gettext("pending"), processing: gettext("processing"), ready: gettext("ready"), failed: gettext("failed") },
  };

  class ApiError extends Error {
    constructor(status, code, message, detail) {
      super(message);
      this.status = status; this.code = code; this.detail = detail || "";
    }
  }

  function csrfToken() {
    const input = document.querySelector("input[name=csrfmiddlewaretoken]");
    if (input) return input.value;
    const match = document.cookie.match(/(?:^|;\s*)csrftoken=([^;]+)/);
    return match ? decodeURIComponent(match[1]) : "";
  }

  // fetch an API path; resolves to the parsed JSON (null for 204), rejects with an ApiError.
  async function api(method, url, body) {
    const opts = { method, credentials: "same-origin", headers: { Accept: "application/json" } };
    if (method !== "GET") opts.headers["X-CSRFToken"] = csrfToken();
    if (body instanceof FormData) {
      opts.body = body;
    } else if (body !== undefined) {
      opts.headers["Content-Type"] = "application/json";
      opts.body = JSON.stringify(body);
    }
    let response;
    try {
      response = await fetch(url, opts);
    } catch (e) {
      throw new ApiError(0, "network", T.network);
    }
    if (response.status === 204) return null;
    let data = null;
    try { data = await response.json(); } catch (e) { data = null; }
    if (!response.ok) throw apiError(response.status, data);
    return data;
  }

  // The ApiError of a response read elsewhere (an XMLHttpRequest): its status and parsed JSON body, if any.
  function apiError(status, data) {
    if (!status) return new ApiError(0, "network", T.network);
    const err = (data && data.error) || {};
    const code = err.code || "http_" + status;
    const error = new ApiError(status, code, T.codes[code] || err.message || ("HTTP " + status), err.message);
    error.fields = err.fields || null;  // per-field messages, when the server gave them
    return error;
  }

  // An error in words: the Chinese sentence, with the server's own message when it adds something.
  function errorText(error) {
    if (!(error instanceof ApiError)) return String(error);
    return error.detail && error.detail !== error.message ? `${error.message}（${error.detail}）` : error.message;
  }

  function el(tag, text, attrs) {
    const node = document.createElement(tag);
    if (text !== undefined && text !== null) node.textContent = String(text);
    if (attrs) for (const [k, v] of Object.entries(attrs)) node.setAttribute(k, v);
    return node;
  }

  function button(label, onClick, cls) {
    const b = el("button", label, { type: "button" });
    if (cls) b.className = cls;
    b.addEventListener("click", onClick);
    return b;
  }

  // One clock (docs/i18n.md, "Times"): a time is shown in the site's zone, the one the server renders its pages in
  // (TIME_ZONE, named by templates/base.html on <body data-time-zone>), never the browser's own, so a page drawn by a
  // script and one drawn by the server say the same "2026-12-08 00:17" for the same moment.
  let clock = null;
  function siteClock() {
    const timeZone = (document.body && document.body.dataset.timeZone) || undefined;
    const options = { year: "numeric", month: "2-digit", day: "2-digit", hour: "2-digit", minute: "2-digit",
                      second: "2-digit", hourCycle: "h23" };
    try { return new Intl.DateTimeFormat("en-US", { ...options, timeZone }); }
    catch (e) { return new Intl.DateTimeFormat("en-US", options); }  // a zone this browser does not know: its own
  }
  // An ISO 8601 time as the server's templates write it ("Y-m-d H:i", with `seconds` "Y-m-d H:i:s"), in the site's zone.
  function formatTime(iso, seconds) {
    if (!iso) return "";
    const d = new Date(iso);
    if (isNaN(d)) return iso;
    clock = clock || siteClock();
    const p = Object.fromEntries(clock.formatToParts(d).map((part) => [part.type, part.value]));
    return `${p.year}-${p.month}-${p.day} ${p.hour}:${p.minute}` + (seconds ? `:${p.second}` : "");
  }

  function statusBadge(status) {
    return el("span", T.statuses[status] || status, { class: "badge status-" + status });
  }

  function sectionPath(parts) { return (parts || []).join(" › "); }
  function pages(start, end) {
    if (!start) return "";
    return end && end !== start ? interpolate(gettext("pages %(start)s–%(end)s"), { start, end }, true)
      : interpolate(gettext("page %(start)s"), { start }, true);
  }

  window.zhiku = { T, ApiError, api, apiError, csrfToken, errorText, el, button, formatTime, statusBadge, sectionPath, pages };
})();
