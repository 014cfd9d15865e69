// The upload is one request: show an indeterminate progress bar while the files travel
// and the server imports them.
(function () {
  var form = document.getElementById("suite-import");
  var bar = document.getElementById("upload-progress");
  if (!form || !bar) return;
  form.addEventListener("submit", function () {
    bar.hidden = false;
    bar.removeAttribute("value");
  });
})();
