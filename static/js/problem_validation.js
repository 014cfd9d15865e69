// While a problem's sandboxed validation is pending, show where it stands (queue place, then its
// phase and elapsed time) and reload the (server-rendered) page once the result has landed. The
// problem's event stream (static/js/live_socket.js) says when something changed; while it is open
// the status is read on each event and every few seconds for the clock, else every second.
// Without JavaScript the page's Refresh link does the same.
(function () {
  "use strict";
  var box = document.getElementById("validation");
  if (!box || box.dataset.pending !== "true") return;
  // the page's badge and this version's row in the versions table say the same
  var badges = ["validation-badge", "version-validation-badge"].map(function (id) { return document.getElementById(id); })
    .filter(Boolean);
  var message = document.getElementById("validation-message");
  var label = document.getElementById("validation-label");
  var live = { lastSeq: parseInt(box.dataset.after || "0", 10) || 0 };
  var timer = null;
  var done = false;

  function socketOpen() { return live.ws && live.ws.readyState === WebSocket.OPEN; }
  function schedule(ms) {
    window.clearTimeout(timer);
    timer = window.setTimeout(poll, ms);
  }
  function finish() {
    if (done) return;
    done = true;
    if (live.pause) live.pause();
    window.location.reload();
  }
  function poll() {
    if (done) return;
    fetch(box.dataset.statusUrl, { headers: { Accept: "application/json" }, credentials: "same-origin" })
      .then(function (response) { return response.ok ? response.json() : null; })
      .then(function (state) {
        if (state && !state.pending) { finish(); return; }
        if (state) {
          badges.forEach(function (badge) { badge.textContent = state.label; badge.className = "badge " + state.badge; });
          if (label) label.textContent = state.label;
          if (message) message.textContent = state.message;
        }
        schedule(socketOpen() ? 3000 : 1000);
      })
      .catch(function () { schedule(3000); });
  }
  if (box.dataset.ws && window.kernelLabFollowSearch) {
    window.kernelLabFollowSearch(box.dataset.ws, live, function (event) {
      if (event.kind === "problem.validation") finish();
      else if (event.kind === "job.phase") schedule(0);
    });
  }
  schedule(1000);
})();
