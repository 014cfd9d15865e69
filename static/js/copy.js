// Copy buttons: <button data-copy="#id"> copies that field's value. The clipboard API needs a
// secure context (https or localhost); elsewhere the field is selected for Ctrl+C instead.
(function () {
  function done(button, text) {
    var label = button.textContent;
    button.textContent = text;
    setTimeout(function () { button.textContent = label; }, 2000);
  }
  document.addEventListener("click", function (event) {
    var button = event.target.closest("button[data-copy]");
    if (!button) return;
    var field = document.querySelector(button.getAttribute("data-copy"));
    if (!field) return;
    field.focus();
    field.select();
    if (navigator.clipboard && window.isSecureContext) {
      navigator.clipboard.writeText(field.value).then(
        function () { done(button, "Copied"); },
        function () { done(button, "Press Ctrl+C"); });
    } else {
      done(button, document.execCommand && document.execCommand("copy") ? "Copied" : "Press Ctrl+C");
    }
  });
})();
