// The assistant form (assistants/templates/assistants/form.html): creates the assistant (POST /api/assistants/)
// or saves its settings (PATCH /api/assistants/<id>/), then opens its page; deletes it. Errors come back with
// their code and the field they concern, shown next to the button.
(function () {
  "use strict";
  const { api, errorText } = window.zhiku;
  const page = document.getElementById("assistant-form-page");
  const form = document.getElementById("assistant-form");
  const status = document.getElementById("assistant-status");
  const id = page.dataset.assistantId;
  // Visible strings: translated by Django's JavaScript catalogue (/jsi18n/, docs/i18n.md).
  const T = {
    saving: gettext("Saving…"),
    chooseKb: gettext("Choose at least one knowledge base."),
    needName: gettext("Give the assistant a name."),
    confirmDelete: (name) => interpolate(gettext("Delete the assistant %(name)s with its keys and conversations?"), { name }, true),
  };

  const lines = (name) => form.elements[name].value.split("\n").map((l) => l.trim()).filter(Boolean);
  const numberOrNull = (name) => {
    const raw = form.elements[name].value.trim();
    return raw === "" ? null : Number(raw);
  };

  function values() {
    return {
      name: form.elements.name.value.trim(),
      description: form.elements.description.value,
      // In the order shown: the assistant's own KBs first, in its order.
      kb_ids: Array.from(form.querySelectorAll('input[name="kb"]:checked')).map((box) => Number(box.value)),
      system_prompt: form.elements.system_prompt.value,
      model: form.elements.model.value,
      top_k: numberOrNull("top_k"),
      score_threshold: numberOrNull("score_threshold"),
      answer_threshold: numberOrNull("answer_threshold"),
      not_found_text: form.elements.not_found_text.value,
      opening_message: form.elements.opening_message.value,
      suggested_questions: lines("suggested_questions"),
      allowed_origins: lines("allowed_origins"),
      share_access: form.elements.share_access.value,
    };
  }

  // The message of a refusal, with the fields it names (DRF's per-field messages, e.g. allowed_origins.0).
  function refusal(error) {
    const fields = error.fields || {};
    const parts = Object.entries(fields).map(([name, messages]) => `${name}: ${[].concat(messages).flat(3).map((m) => typeof m === "object" ? JSON.stringify(m) : m).join(" ")}`);
    return errorText(error) + (parts.length ? " — " + parts.join("; ") : "");
  }

  form.addEventListener("submit", async (e) => {
    e.preventDefault();
    const body = values();
    if (!body.name) { status.textContent = T.needName; form.elements.name.focus(); return; }
    if (!body.kb_ids.length) { status.textContent = T.chooseKb; return; }
    status.textContent = T.saving;
    try {
      const saved = await api(id ? "PATCH" : "POST", id ? `/api/assistants/${id}/` : "/api/assistants/", body);
      window.location.assign(`/assistants/${saved.id}/`);
    } catch (err) {
      status.textContent = refusal(err);
      status.classList.add("error-text");
    }
  });

  const remove = document.getElementById("assistant-delete");
  if (remove) {
    remove.addEventListener("click", async () => {
      if (!window.confirm(T.confirmDelete(remove.dataset.name))) return;
      try {
        await api("DELETE", `/api/assistants/${id}/`);
        window.location.assign("/assistants/");
      } catch (err) { status.textContent = errorText(err); }
    });
  }
})();
