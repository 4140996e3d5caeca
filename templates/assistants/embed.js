// Zhiku's chat bubble (assistants/embed.py): a button in the corner that opens the assistant's chat in an iframe.
// Built with the DOM and CSSOM only (no inline style attributes), so it runs under the host page's own CSP.
(function () {
  "use strict";
  var C = {{ config|safe }};
  var registry = (window.__zhikuEmbeds = window.__zhikuEmbeds || {});
  if (registry[C.chat]) return;
  registry[C.chat] = true;

  function start() {
    var button = document.createElement("button");
    var panel = document.createElement("div");
    var frame = null;
    button.type = "button";
    button.className = "zhiku-chat-bubble";
    button.title = C.open;
    button.setAttribute("aria-label", C.open);
    button.setAttribute("aria-expanded", "false");
    button.textContent = "\uD83D\uDCAC";
    Object.assign(button.style, {
      position: "fixed", right: "20px", bottom: "20px", width: "56px", height: "56px", borderRadius: "50%",
      border: "0", background: "#1f6feb", color: "#fff", fontSize: "26px", lineHeight: "56px", padding: "0",
      cursor: "pointer", boxShadow: "0 4px 14px rgba(0,0,0,.25)", zIndex: "2147483000"
    });
    panel.className = "zhiku-chat-panel";
    Object.assign(panel.style, {
      position: "fixed", right: "20px", bottom: "88px", width: "380px", maxWidth: "calc(100vw - 40px)",
      height: "600px", maxHeight: "calc(100vh - 120px)", borderRadius: "12px", overflow: "hidden",
      boxShadow: "0 8px 30px rgba(0,0,0,.25)", background: "#fff", display: "none", zIndex: "2147483000"
    });
    button.addEventListener("click", function () {
      if (!frame) {
        frame = document.createElement("iframe");
        frame.className = "zhiku-chat-frame";
        frame.title = C.open;
        frame.src = C.chat + "?origin=" + encodeURIComponent(window.location.origin);
        Object.assign(frame.style, { width: "100%", height: "100%", border: "0", display: "block" });
        panel.appendChild(frame);
      }
      var open = panel.style.display === "none";
      panel.style.display = open ? "block" : "none";
      button.textContent = open ? "\u00D7" : "\uD83D\uDCAC";
      button.title = open ? C.close : C.open;
      button.setAttribute("aria-label", button.title);
      button.setAttribute("aria-expanded", open ? "true" : "false");
    });
    document.body.appendChild(panel);
    document.body.appendChild(button);
  }

  if (document.body) start();
  else document.addEventListener("DOMContentLoaded", start);
})();
