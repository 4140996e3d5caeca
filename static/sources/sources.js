// The console's sources (the KB page's Sources section, a source's page): add, edit, run now, pause, resume,
// remove, cancel a run, through the REST API (sources/api.py). The page's own words come from its data-*
// attributes (translated by the template); the forms are built from each kind's fields (sources/console.py).
(function () {
  "use strict";
  const section = document.getElementById("sources");
  if (!section || !window.zhiku) return;
  const { api, errorText } = window.zhiku;
  const kbId = section.dataset.kbId;
  const status = document.getElementById("source-status");

  function say(text, bad) {
    status.textContent = text;
    status.className = "small" + (bad ? " error-text" : "");
  }

  function reloadSoon() { window.location.reload(); }

  // --- the form: one fieldset per kind; settings, credentials, schedule -----------------------------------

  function visibleFieldset(form) {
    return Array.from(form.querySelectorAll("fieldset.kind-fields")).find((f) => !f.hidden);
  }

  function settingValue(input) {
    const type = input.dataset.type;
    if (type === "checkbox") return input.checked;
    const raw = input.value.trim();
    if (raw === "") return undefined;
    if (type === "number") return Number(raw);
    if (type === "lines") return raw.split("\n").map((s) => s.trim()).filter(Boolean);
    return raw;
  }

  // The request body of the form, or throws an Error with the sentence to show.
  function collect(form) {
    const fieldset = visibleFieldset(form);
    const body = { name: form.querySelector("[data-name]").value.trim() };
    const json = fieldset.querySelector("[data-settings-json]");
    if (json) {
      try { body.settings = JSON.parse(json.value || "{}"); } catch (e) { throw new Error(section.dataset.badJson); }
    } else {
      // Editing keeps the settings the form has no field for; a field left empty drops its setting.
      const stored = form.dataset.mode === "edit" && document.getElementById("source-settings");
      body.settings = stored ? JSON.parse(stored.textContent) : {};
      for (const input of fieldset.querySelectorAll("[data-setting]")) {
        const value = settingValue(input);
        if (value === undefined && input.dataset.required) throw new Error(section.dataset.required);
        if (value === undefined) delete body.settings[input.dataset.setting];
        else body.settings[input.dataset.setting] = value;
      }
    }
    const credentials = {};
    for (const input of fieldset.querySelectorAll("[data-credential]")) {
      if (input.value) credentials[input.dataset.credential] = input.value;
    }
    if (Object.keys(credentials).length || form.dataset.mode === "add") body.credentials = credentials;
    body.schedule = form.querySelector("[data-schedule]").value;
    body.cron = form.querySelector("[data-cron]").value.trim();
    return body;
  }

  const picker = section.querySelector("[data-kind-picker]");
  if (picker) {
    const show = () => {
      for (const f of section.querySelectorAll("#source-add-form fieldset.kind-fields")) f.hidden = f.dataset.kind !== picker.value;
    };
    picker.addEventListener("change", show);
    show();
  }

  const addForm = document.getElementById("source-add-form");
  if (addForm) {
    addForm.addEventListener("submit", async (event) => {
      event.preventDefault();
      try {
        const body = collect(addForm);
        body.kind = picker.value;
        const source = await api("POST", `/api/kbs/${kbId}/sources/`, body);
        window.location.href = `/kbs/${kbId}/sources/${source.id}/`;
      } catch (error) {
        say(error instanceof window.zhiku.ApiError ? errorText(error) : error.message, true);
      }
    });
  }

  const editForm = document.getElementById("source-edit-form");
  if (editForm) {
    editForm.addEventListener("submit", async (event) => {
      event.preventDefault();
      try {
        await api("PATCH", `/api/sources/${editForm.dataset.source}/`, collect(editForm));
        say(section.dataset.saved, false);
        reloadSoon();
      } catch (error) {
        say(error instanceof window.zhiku.ApiError ? errorText(error) : error.message, true);
      }
    });
  }

  // --- the buttons ------------------------------------------------------------------------------------

  const actions = {
    run: (b) => api("POST", `/api/sources/${b.dataset.source}/run/`),
    pause: (b) => api("PATCH", `/api/sources/${b.dataset.source}/`, { paused: true }),
    resume: (b) => api("PATCH", `/api/sources/${b.dataset.source}/`, { paused: false }),
    cancel: (b) => api("POST", `/api/source-runs/${b.dataset.run}/cancel/`),
    remove: (b) => api("DELETE", `/api/sources/${b.dataset.source}/`),
  };

  document.addEventListener("click", async (event) => {
    const button = event.target.closest("button[data-action]");
    if (!button || !actions[button.dataset.action]) return;
    const action = button.dataset.action;
    if (action === "remove" && !window.confirm(section.dataset.confirmRemove)) return;
    button.disabled = true;
    try {
      await actions[action](button);
      if (action === "remove" && section.dataset.afterRemove) window.location.href = section.dataset.afterRemove;
      else reloadSoon();
    } catch (error) {
      button.disabled = false;
      say(errorText(error), true);
    }
  });
})();
