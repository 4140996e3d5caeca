// Shared helpers of the console pages (window.zhiku): calls to the REST API with the session cookie and
// the CSRF token, errors in words, small DOM helpers. Text goes in with textContent only, so nothing
// from documents, queries or names is ever parsed as HTML.
(function () {
  "use strict";
  // Visible strings in one place, to wrap for translation later.
  const T = {
    network: "网络错误，请检查连接后重试。",
    codes: {
      role_required: "您的角色不允许执行此操作。",
      permission_denied: "您的角色不允许执行此操作。",
      not_authenticated: "登录已失效，请重新登录。",
      kb_not_found: "知识库不存在或您无权访问。",
      document_not_found: "文档不存在或您无权访问。",
      chunk_not_found: "分段不存在或您无权访问。",
      busy: "文档仍在处理中，请稍后再试。",
      no_file: "原始文件未保存，无法重新索引。",
      file_too_large: "文件太大。",
      body_too_large: "请求太大。",
      unsupported_type: "不支持的文件类型。",
      unknown_group: "用户组不存在。",
      unknown_user: "用户不存在。",
      throttled: "请求太频繁，请稍后再试。",
    },
    statuses: { pending: "等待中", processing: "处理中", ready: "已就绪", failed: "失败" },
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
    if (!response.ok) {
      const err = (data && data.error) || {};
      const code = err.code || "http_" + response.status;
      throw new ApiError(response.status, code, T.codes[code] || err.message || ("HTTP " + response.status), err.message);
    }
    return data;
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

  function pad(n) { return String(n).padStart(2, "0"); }
  function formatTime(iso) {
    if (!iso) return "";
    const d = new Date(iso);
    if (isNaN(d)) return iso;
    return `${d.getFullYear()}-${pad(d.getMonth() + 1)}-${pad(d.getDate())} ${pad(d.getHours())}:${pad(d.getMinutes())}`;
  }

  function statusBadge(status) {
    return el("span", T.statuses[status] || status, { class: "badge status-" + status });
  }

  function sectionPath(parts) { return (parts || []).join(" › "); }
  function pages(start, end) {
    if (!start) return "";
    return end && end !== start ? `第 ${start}–${end} 页` : `第 ${start} 页`;
  }

  window.zhiku = { T, ApiError, api, errorText, el, button, formatTime, statusBadge, sectionPath, pages };
})();
