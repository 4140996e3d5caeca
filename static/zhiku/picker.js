// The person and group picker: a text input marked data-picker="user|group|all" searches GET /api/people/search/
// as one types and offers the matches in a list; picking one writes its id into the hidden input named by
// data-picker-id (and "user" or "group" into data-picker-kind's), so a form never sends a typed name.
// Also: a form with data-confirm asks before it is sent.
(function () {
  "use strict";
  const { api, errorText, el } = window.zhiku;
  const fmt = (text, values) => interpolate(text, values, true);
  const T = {
    none: gettext("No one matches."),
    searching: gettext("Searching…"),
    pickFirst: gettext("Pick a person or group from the list."),
    group: gettext("group"),
    members: (n) => fmt(ngettext("%(n)s member", "%(n)s members", n), { n }),
  };
  const DELAY_MS = 200;

  function attach(input) {
    const kind = input.dataset.picker || "all";
    const idField = document.getElementById(input.dataset.pickerId);
    const kindField = input.dataset.pickerKind ? document.getElementById(input.dataset.pickerKind) : null;
    const list = el("ul", null, { class: "picker-list", role: "listbox", id: input.id + "-list", hidden: "" });
    input.after(list);
    input.setAttribute("role", "combobox");
    input.setAttribute("aria-autocomplete", "list");
    input.setAttribute("aria-controls", list.id);
    input.setAttribute("aria-expanded", "false");
    let timer = null, asked = 0, active = -1, options = [];

    function clearPick() {
      idField.value = "";
      if (kindField) kindField.value = "";
    }
    function close() { list.hidden = true; input.setAttribute("aria-expanded", "false"); active = -1; }
    function show(items) {
      list.replaceChildren(...items);
      list.hidden = false;
      input.setAttribute("aria-expanded", "true");
    }
    function choose(item) {
      idField.value = String(item.id);
      if (kindField) kindField.value = item.kind;
      input.value = item.label;
      close();
      input.dispatchEvent(new CustomEvent("zhiku:picked", { bubbles: true, detail: item }));
    }
    function option(item, index) {
      const li = el("li", null, { role: "option", id: `${list.id}-${index}`, class: "picker-option", "data-kind": item.kind, "data-id": String(item.id) });
      li.append(el("span", item.label, { class: "picker-label" }), el("span", item.detail, { class: "muted small" }));
      li.addEventListener("mousedown", (event) => { event.preventDefault(); choose(item); });
      return li;
    }
    async function search() {
      const q = input.value.trim();
      if (!q) { close(); return; }
      const mine = ++asked;
      show([el("li", T.searching, { class: "muted small" })]);
      let data;
      try {
        data = await api("GET", `/api/people/search/?q=${encodeURIComponent(q)}&kind=${kind}`);
      } catch (e) {
        if (mine === asked) show([el("li", errorText(e), { class: "error-text small" })]);
        return;
      }
      if (mine !== asked) return;  // a later search is on its way
      const users = data.users.map((u) => ({ kind: "user", id: u.id, label: u.display_name,
        detail: [u.display_name !== u.username ? u.username : "", u.email].filter(Boolean).join(" · ") }));
      const groups = data.groups.map((g) => ({ kind: "group", id: g.id, label: g.name, detail: `${T.group} · ${T.members(g.member_count)}` }));
      options = users.concat(groups);
      active = -1;
      show(options.length ? options.map(option) : [el("li", T.none, { class: "muted small picker-empty" })]);
    }
    function move(step) {
      if (!options.length || list.hidden) return;
      active = (active + step + options.length) % options.length;
      list.querySelectorAll(".picker-option").forEach((li, i) => li.classList.toggle("active", i === active));
      input.setAttribute("aria-activedescendant", `${list.id}-${active}`);
    }

    input.addEventListener("input", () => {
      clearPick();
      clearTimeout(timer);
      timer = setTimeout(search, DELAY_MS);
    });
    input.addEventListener("keydown", (event) => {
      if (event.key === "ArrowDown") { event.preventDefault(); move(1); }
      else if (event.key === "ArrowUp") { event.preventDefault(); move(-1); }
      else if (event.key === "Escape") close();
      else if (event.key === "Enter" && !list.hidden && active >= 0) { event.preventDefault(); choose(options[active]); }
    });
    input.addEventListener("blur", () => setTimeout(close, 100));
    if (input.form) {
      input.form.addEventListener("reset", () => { clearPick(); close(); });
      // Nothing picked yet: say so rather than send a form without an id.
      input.form.addEventListener("submit", (event) => {
        if (idField.value) return;
        event.preventDefault();
        show([el("li", T.pickFirst, { class: "error-text small picker-empty" })]);
      });
    }
  }

  document.querySelectorAll("input[data-picker]").forEach(attach);
  document.querySelectorAll("form[data-confirm]").forEach((form) => form.addEventListener("submit", (event) => {
    if (!window.confirm(form.dataset.confirm)) event.preventDefault();
  }));
  window.zhiku.pickerAttach = attach;
})();
