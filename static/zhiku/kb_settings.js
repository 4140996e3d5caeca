// The settings page (owners): PATCH the KB's name and retrieval settings, manage members, delete the KB.
(function () {
  "use strict";
  const { api, errorText, el, button } = window.zhiku;
  // Visible strings: translated by Django's JavaScript catalogue (/jsi18n/, docs/i18n.md).
  const fmt = (text, values) => interpolate(text, values, true);
  const T = {
    saving: gettext("Saving…"), saved: gettext("Saved."), failed: gettext("Saving failed: "),
    user: gettext("User"), group: gettext("Group"),
    roles: { owner: gettext("owner"), editor: gettext("editor"), viewer: gettext("viewer") },
    remove: gettext("Remove"), noMembers: gettext("No other members yet."),
    pickFirst: gettext("Pick a person or group from the list."),
    added: (name) => fmt(gettext("Added %(name)s."), { name }),
    changed: (name) => fmt(gettext("Changed the role of %(name)s."), { name }),
    removed: (name) => fmt(gettext("Removed %(name)s."), { name }),
    confirmRemove: (name) => fmt(gettext("Remove the member “%(name)s”?"), { name }),
    confirmDelete: (name) => fmt(gettext("Delete the knowledge base “%(name)s” with all its documents? This cannot be undone. Type the knowledge base's name to confirm:"), { name }),
  };
  const root = document.getElementById("settings-page");
  const base = `/api/kbs/${root.dataset.kbId}/`;

  // --- settings ------------------------------------------------------------------

  const form = document.getElementById("settings-form");
  const value = (name) => form.elements[name].value;
  const lines = (text) => text.split("\n").map((s) => s.trim()).filter(Boolean);
  // An empty number field means "none" (null): no source cap, FAQ direct answers off.
  const optionalNumber = (text, parse) => (text.trim() === "" ? null : parse(text, 10));

  form.addEventListener("submit", async (event) => {
    event.preventDefault();
    const status = document.getElementById("settings-status");
    const body = {
      name: value("name"), description: value("description"),
      top_k: parseInt(value("top_k"), 10), candidates: parseInt(value("candidates"), 10), rrf_k: parseInt(value("rrf_k"), 10),
      fusion: value("fusion"), vector_weight: parseFloat(value("vector_weight")), keyword_weight: parseFloat(value("keyword_weight")),
      rerank_enabled: form.elements.rerank_enabled.checked, learn_from_feedback: form.elements.learn_from_feedback.checked,
      score_threshold: parseFloat(value("score_threshold")),
      answer_threshold: parseFloat(value("answer_threshold")),
      not_found_text: value("not_found_text"), not_found_text_en: value("not_found_text_en"),
      answer_mode: value("answer_mode"), answer_model: value("answer_model"), system_prompt: value("system_prompt"),
      max_sources: optionalNumber(value("max_sources"), parseInt), faq_direct_threshold: optionalNumber(value("faq_direct_threshold"), parseFloat),
      user_words: lines(value("user_words")),
      synonyms: lines(value("synonyms")).map((line) => line.split(/[\s,，、]+/).filter(Boolean)),
    };
    status.className = "small muted";
    status.textContent = T.saving;
    try {
      await api("PATCH", base, body);
      status.className = "small";
      status.textContent = T.saved;
    } catch (e) {
      status.className = "small error-text";
      status.textContent = T.failed + errorText(e);
    }
  });

  // --- members -------------------------------------------------------------------

  const rows = document.getElementById("member-rows");
  const memberStatus = document.getElementById("member-status");
  function say(text, bad) { memberStatus.className = bad ? "small error-text" : "small"; memberStatus.textContent = text; }

  function roleSelect(member) {
    const select = el("select", null, { "aria-label": T.roles[member.role] });
    Object.entries(T.roles).forEach(([role, label]) => {
      const option = el("option", label, { value: role });
      if (role === member.role) option.selected = true;
      select.append(option);
    });
    select.addEventListener("change", async () => {
      let message = T.changed(member.display_name || member.user || member.group), bad = false;
      try {
        await api("PATCH", `${base}members/${member.id}/`, { role: select.value });
      } catch (e) {
        message = errorText(e); bad = true;
      }
      await loadMembers();
      say(message, bad);
    });
    return select;
  }

  async function loadMembers() {
    let members = [];
    try {
      let url = `${base}members/?page_size=100`;
      while (url) {  // every page: a KB rarely has more than a few dozen members
        const data = await api("GET", url);
        members = members.concat(data.results);
        url = data.next;
      }
    } catch (e) {
      say(errorText(e), true);
      return;
    }
    if (!members.length) {
      const empty = el("tr");
      empty.append(el("td", T.noMembers, { colspan: "4", class: "muted" }));
      rows.replaceChildren(empty);
      return;
    }
    rows.replaceChildren(...members.map((m) => {
      const name = m.display_name || m.user || m.group;
      const tr = el("tr", null, { "data-member-id": String(m.id) });
      const roleCell = el("td");
      roleCell.append(roleSelect(m));
      const actions = el("td", null, { class: "actions" });
      actions.append(button(T.remove, async () => {
        if (!window.confirm(T.confirmRemove(name))) return;
        let message = T.removed(name), bad = false;
        try {
          await api("DELETE", `${base}members/${m.id}/`);
        } catch (e) {
          message = errorText(e); bad = true;
        }
        await loadMembers();
        say(message, bad);
      }, "danger"));
      // A person by their name, the username beside it (core/names.py); a group by its name.
      const who = el("td", m.display_name || name, { class: "member-name" });
      if (m.user && m.display_name && m.display_name !== m.user) who.append(" ", el("span", m.user, { class: "muted" }));
      tr.append(who, el("td", m.user ? T.user : T.group), roleCell, actions);
      return tr;
    }));
  }

  // The person or group is picked from the search (static/zhiku/picker.js), which writes its kind and id.
  document.getElementById("member-form").addEventListener("submit", async (event) => {
    event.preventDefault();
    const picked = document.getElementById("m-name"), id = document.getElementById("m-id").value;
    const kind = document.getElementById("m-kind").value;
    if (!id) { say(T.pickFirst, true); return; }
    const name = picked.value.trim();
    let message = T.added(name), bad = false;
    try {
      await api("POST", `${base}members/`, { [kind === "group" ? "group_id" : "user_id"]: parseInt(id, 10), role: document.getElementById("m-role").value });
      event.target.reset();
    } catch (e) {
      message = errorText(e); bad = true;
    }
    await loadMembers();
    say(message, bad);
  });

  // --- delete --------------------------------------------------------------------

  const del = document.getElementById("kb-delete");
  del.addEventListener("click", async () => {
    const answer = window.prompt(T.confirmDelete(del.dataset.name));
    if (answer === null || answer.trim() !== del.dataset.name) return;
    try {
      await api("DELETE", base);
      window.location.href = "/";
    } catch (e) {
      window.alert(errorText(e));
    }
  });

  loadMembers();
})();
