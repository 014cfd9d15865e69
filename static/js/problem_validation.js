// While a problem's sandboxed validation is pending, ask for its status every second and
// reload the (server-rendered) page once the result has landed. Without JavaScript the
// page's Refresh link does the same.
(function () {
  "use strict";
  var box = document.getElementById("validation");
  if (!box || box.dataset.pending !== "true") return;
  var badge = document.getElementById("validation-badge");
  var message = document.getElementById("validation-message");

  function poll() {
    fetch(box.dataset.statusUrl, { headers: { Accept: "application/json" }, credentials: "same-origin" })
      .then(function (response) { return response.ok ? response.json() : null; })
      .then(function (state) {
        if (state && !state.pending) { window.location.reload(); return; }
        if (state) {
          if (badge) { badge.textContent = state.label; badge.className = "badge " + state.badge; }
          if (message) message.textContent = state.message;
        }
        window.setTimeout(poll, 1000);
      })
      .catch(function () { window.setTimeout(poll, 3000); });
  }
  window.setTimeout(poll, 1000);
})();
