// The endpoint form: choosing a kind fills in its usual base URL when the field is empty or holds another kind's.
(function () {
  "use strict";
  const kind = document.getElementById("f-kind");
  const url = document.getElementById("f-base_url");
  const names = document.getElementById("f-model_names");
  if (!kind || !url) return;
  const presets = Array.from(kind.options).map((o) => o.dataset.baseUrl).filter(Boolean);
  function fill() {
    const option = kind.options[kind.selectedIndex];
    const current = url.value.trim();
    if (!current || presets.includes(current)) url.value = option.dataset.baseUrl || "";
    if (names) names.placeholder = option.dataset.examples || "";
  }
  kind.addEventListener("change", fill);
  if (!url.value.trim()) fill();
})();
