// Text from documents shown with its tables as tables, on every page (window.zhikuRich): chunk texts in search
// results, hit testing, the document page and the chunking preview, chat sources; and answers as Markdown
// (markdown(): the console's chat, static/chat/chat.js, and the share link's and embedded chat's,
// static/assistants/visitor_chat.js). A Markdown table row is "| a | b |"; the "|---|---|" rule under the
// header is skipped, the first row becomes the header. Tables are written by knowledge/parsers/base.py
// (markdown_table: "\|" for a "|" inside a cell). Every node is built with the DOM and textContent: nothing from a
// document is ever parsed as HTML.
(function () {
  "use strict";

  // A row: starts and ends with "|" (citation markers such as [1] may follow it in an answer, kept in `tail`).
  const ROW = /^\s*\|(.*)\|\s*((?:[\[【]\d{1,3}[\]】])*)\s*$/;
  const RULE = /^\s*\|?\s*:?-{2,}:?\s*(\|\s*:?-{2,}:?\s*)*\|?\s*$/;

  // The cells of a row line ("\|" is a "|" inside a cell), or null when the line is not a row.
  function tableRow(line) {
    const m = ROW.exec(line);
    if (!m) return null;
    const cells = [];
    let cell = "";
    for (let i = 0; i < m[1].length; i++) {
      const ch = m[1][i];
      if (ch === "\\" && m[1][i + 1] === "|") { cell += "|"; i++; }
      else if (ch === "|") { cells.push(cell.trim()); cell = ""; }
      else cell += ch;
    }
    cells.push(cell.trim());
    return { cells, tail: m[2] || "" };
  }
  function isRule(line) { return RULE.test(line); }

  // A scrolling box holding a table of `rows` (lists of cell strings), the first row the header; `fill(cell, text,
  // rowIndex)` writes a cell (default: the text as text).
  function table(rows, fill) {
    const box = document.createElement("div");
    box.className = "table-box";
    const t = document.createElement("table");
    t.className = "rich-table";
    const width = Math.max(...rows.map((r) => r.length));
    rows.forEach((cells, i) => {
      const tr = document.createElement("tr");
      for (let c = 0; c < width; c++) {
        const cell = document.createElement(i === 0 ? "th" : "td");
        const text = cells[c] === undefined ? "" : cells[c];
        if (fill) fill(cell, text, i); else cell.textContent = text;
        tr.appendChild(cell);
      }
      t.appendChild(tr);
    });
    box.appendChild(t);
    return box;
  }

  // `text` into `container` (emptied first): runs of table lines holding at least two rows (or a row and its rule)
  // become a table, every other line stays text as it was (the container's white-space keeps the line breaks).
  // The text is kept on the container (source(container)) for editors that need it back.
  function render(text, container) {
    const lines = String(text === null || text === undefined ? "" : text).split("\n");
    container.replaceChildren();
    container.dataset.source = lines.join("\n");
    let plain = [];
    let i = 0;
    const flush = (trimEnd) => {
      let s = plain.join("\n");
      if (trimEnd) s = s.replace(/\n+$/, "");
      if (container.lastChild && container.lastChild.nodeType === 1) s = s.replace(/^\n+/, "");
      if (s) container.appendChild(document.createTextNode(s));
      plain = [];
    };
    while (i < lines.length) {
      let j = i;
      const rows = [];
      let rules = 0;
      while (j < lines.length) {
        if (rows.length && isRule(lines[j])) { rules++; j++; continue; }
        const row = tableRow(lines[j]);
        if (!row) break;
        if (row.tail) row.cells[row.cells.length - 1] += row.tail;
        rows.push(row.cells);
        j++;
      }
      if (rows.length >= 2 || (rows.length === 1 && rules)) {
        flush(true);
        container.appendChild(table(rows));
        i = j;
      } else {
        plain.push(lines[i]);
        i++;
      }
    }
    flush(false);
    container.classList.toggle("has-table", !!container.querySelector("table"));
    return container;
  }

  // --- answers: a safe Markdown subset (paragraphs, headings, lists, tables, code, bold, [n] citations) ---------
  // Every node is built with the DOM and textContent, as above: "<script>" in an answer is shown as text.
  const INLINE = /(`[^`\n]+`|\*\*[^*\n]+\*\*|\[\d{1,3}\]|【\d{1,3}】)/;
  function node(tag, text) {
    const n = document.createElement(tag);
    if (text !== undefined) n.textContent = text;
    return n;
  }
  // `text` into `parent`: inline code, bold, and citations [n] / 【n】 as `cite(n)` makes them (a node, or null:
  // the marker stays text).
  function inline(text, parent, cite) {
    text.split(INLINE).forEach((part) => {
      if (!part) return;
      let m;
      if (part.length > 2 && part[0] === "`" && part[part.length - 1] === "`") {
        parent.appendChild(node("code", part.slice(1, -1)));
      } else if (part.startsWith("**") && part.endsWith("**") && part.length > 4) {
        parent.appendChild(node("strong", part.slice(2, -2)));
      } else if ((m = /^[\[【](\d{1,3})[\]】]$/.exec(part)) && cite && (m = cite(Number(m[1])))) {
        parent.appendChild(m);
      } else {
        parent.appendChild(document.createTextNode(part));
      }
    });
  }
  // An answer's Markdown into `container` (emptied first). A table is a run of rows, its first row the header, its
  // "|---|" rule skipped (citations after a row's closing pipe go into its last cell); a line that is not a row ends
  // it, as in GFM. Headings start at h4 (the page has its own).
  function markdown(text, container, cite) {
    container.replaceChildren();
    const lines = String(text === null || text === undefined ? "" : text).split("\n");
    let para = null, list = null, code = null, table = null;
    const closeBlocks = () => { para = null; list = null; table = null; };
    for (const line of lines) {
      if (code) {
        if (/^\s*```/.test(line)) { code = null; continue; }
        code.textContent += (code.textContent ? "\n" : "") + line;
        continue;
      }
      let m;
      if (/^\s*```/.test(line)) {
        closeBlocks();
        const pre = node("pre"); code = node("code"); pre.appendChild(code); container.appendChild(pre);
      } else if (!line.trim()) {
        closeBlocks();
      } else if (table && isRule(line)) {
        continue;
      } else if ((m = tableRow(line))) {
        para = null; list = null;
        if (!table) {
          const box = node("div"); box.className = "table-box";
          table = node("table"); box.appendChild(table); container.appendChild(box);
        }
        const tag = table.rows.length ? "td" : "th";
        const tr = node("tr");
        m.cells.forEach((cell, i) => {
          const td = node(tag);
          inline(cell + (i === m.cells.length - 1 ? m.tail : ""), td, cite);
          tr.appendChild(td);
        });
        table.appendChild(tr);
      } else if ((m = /^(#{1,6})\s+(.*)$/.exec(line))) {
        closeBlocks();
        const h = node("h" + Math.min(6, m[1].length + 3)); inline(m[2], h, cite); container.appendChild(h);
      } else if ((m = /^\s*(?:([-*+])|(\d+)[.)])\s+(.*)$/.exec(line))) {
        para = null; table = null;
        const tag = m[1] ? "ul" : "ol";
        if (!list || list.tagName.toLowerCase() !== tag) { list = node(tag); container.appendChild(list); }
        const li = node("li"); inline(m[3], li, cite); list.appendChild(li);
      } else {
        list = null; table = null;
        if (!para) { para = node("p"); container.appendChild(para); } else { para.appendChild(node("br")); }
        inline(line, para, cite);
      }
    }
    return container;
  }

  // The original text of a container filled by render() (its textContent would lose the table's Markdown).
  function source(container) {
    return container.dataset.source !== undefined ? container.dataset.source : container.textContent;
  }

  // Server-rendered text marked data-richtext (the document page's chunks) is upgraded once the page has loaded.
  function upgrade(root) {
    (root || document).querySelectorAll("[data-richtext]").forEach((node) => {
      if (node.dataset.source === undefined) render(node.textContent, node);
    });
  }
  if (document.readyState === "loading") document.addEventListener("DOMContentLoaded", () => upgrade());
  else upgrade();

  window.zhikuRich = { tableRow, isRule, table, render, source, upgrade, inline, markdown };
})();
