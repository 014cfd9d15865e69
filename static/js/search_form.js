// Forms that start a search: the LLM's settings (model, effort, thinking budget) are hidden while
// the built-in proposer, which uses none of them, is picked. Without this script they all show.
(function () {
  "use strict";
  document.querySelectorAll(".llm-knobs").forEach(function (knobs) {
    var form = knobs.closest("form");
    var proposer = form && form.querySelector("select[name$='proposer']");
    if (!proposer) return;
    function sync() { knobs.hidden = proposer.value === "playbook"; }
    proposer.addEventListener("change", sync);
    sync();
  });
})();
