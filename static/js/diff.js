// "Wrap long lines" buttons beside diffs: <button class="diff-toggle" data-diff="#id" hidden>.
// Pressed, the diff's long lines wrap in their column instead of scrolling; the choice is kept for
// the next diff this browser opens. The button stays hidden where this script does not run.
(function () {
  var KEY = "kernellab.diff.wrap";
  function set(button, on) {
    var box = document.querySelector(button.getAttribute("data-diff"));
    if (box) box.classList.toggle("wrap", on);
    button.setAttribute("aria-pressed", on ? "true" : "false");
  }
  // Until the reader chooses, a phone-width screen starts wrapped: its column holds few characters.
  var saved = window.matchMedia("(max-width: 799px)").matches;
  try {
    var chosen = window.localStorage.getItem(KEY);
    if (chosen !== null) saved = chosen === "1";
  } catch (e) { /* storage refused: the width decides */ }
  document.querySelectorAll("button.diff-toggle").forEach(function (button) {
    button.hidden = false;
    set(button, saved);
    button.addEventListener("click", function () {
      var on = button.getAttribute("aria-pressed") !== "true";
      set(button, on);
      try { window.localStorage.setItem(KEY, on ? "1" : "0"); } catch (e) { /* not kept */ }
    });
  });
})();
