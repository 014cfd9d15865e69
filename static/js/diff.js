// "Wrap long lines" buttons beside diffs: <button class="diff-toggle" data-diff="#id" hidden>.
// Pressed, the diff's long lines wrap in their column instead of scrolling; the choice is kept for
// the next diff this browser opens. The button stays hidden where this script does not run.
(function () {
  var KEY = "kernellab.diff.wrap";
  var buttons = document.querySelectorAll("button.diff-toggle");
  function set(button, on) {
    var box = document.querySelector(button.getAttribute("data-diff"));
    if (box) box.classList.toggle("wrap", on);
    button.setAttribute("aria-pressed", on ? "true" : "false");
  }
  // Until the reader chooses, a phone-width screen wraps (its column holds few characters), also
  // after a turn of the phone or a resize.
  var narrow = window.matchMedia("(max-width: 799px)");
  var chosen = null;
  try { chosen = window.localStorage.getItem(KEY); } catch (e) { /* storage refused: the width decides */ }
  function byWidth() { if (chosen === null) buttons.forEach(function (b) { set(b, narrow.matches); }); }
  buttons.forEach(function (button) {
    button.hidden = false;
    set(button, chosen === null ? narrow.matches : chosen === "1");
    button.addEventListener("click", function () {
      var on = button.getAttribute("aria-pressed") !== "true";
      chosen = on ? "1" : "0";
      set(button, on);
      try { window.localStorage.setItem(KEY, chosen); } catch (e) { /* not kept */ }
    });
  });
  if (narrow.addEventListener) narrow.addEventListener("change", byWidth);
})();
