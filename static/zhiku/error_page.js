// The error pages' "back" button (templates/errors/way_back.html): shown only when there is a page to go back to.
(function () {
  "use strict";
  const back = document.getElementById("go-back");
  if (!back || window.history.length < 2) return;
  back.hidden = false;
  back.addEventListener("click", () => window.history.back());
})();
