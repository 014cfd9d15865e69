// Forms that start a search: the LLM's settings (model, effort, thinking budget) are hidden while a
// proposer that takes no model (data-proposers lists those that do) is picked. Without this script they all show.
(function () {
  "use strict";
  document.querySelectorAll(".llm-knobs").forEach(function (knobs) {
    var form = knobs.closest("form");
    var proposer = form && form.querySelector("select[name$='proposer']");
    if (!proposer) return;
    var takesModel = (knobs.dataset.proposers || "").split(" ");
    function sync() { knobs.hidden = takesModel.indexOf(proposer.value) < 0; }
    proposer.addEventListener("change", sync);
    sync();
  });
})();
