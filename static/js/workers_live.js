// Keeps the Workers page current: every 5 s while the tab is visible, fetch the live part again
// (?fragment=1, rendered on the server from the same template as the page) and put it in place.
// Hidden tabs do not poll; showing the tab again refreshes at once. Without JavaScript, the
// page's Refresh link does the same.
(function () {
  "use strict";
  var box = document.getElementById("workers-live");
  if (!box) return;
  var PERIOD_MS = 5000;
  var timer = null;
  var inFlight = false;

  function schedule() {
    if (!document.hidden && timer === null && !inFlight) timer = window.setTimeout(refresh, PERIOD_MS);
  }

  function swapIn(html) {
    // The fragment is our own autoescaped template. It is parsed in an inert document and its nodes
    // moved over, so no HTML string is ever assigned to the live page.
    var parsed = new DOMParser().parseFromString(html, "text/html");
    var nodes = document.createDocumentFragment();
    while (parsed.body.firstChild) nodes.appendChild(parsed.body.firstChild);
    box.replaceChildren(nodes);
  }

  function refresh() {
    timer = null;
    if (document.hidden) return;
    inFlight = true;
    // redirect "error": an expired session would otherwise swap the login page into the table.
    fetch(box.dataset.fragmentUrl, { credentials: "same-origin", redirect: "error", headers: { Accept: "text/html" } })
      .then(function (response) { return response.ok ? response.text() : null; })
      .then(function (html) { if (html !== null) swapIn(html); })
      .catch(function () { /* server restarting or session gone: keep the last table, try again */ })
      .then(function () { inFlight = false; schedule(); });
  }

  document.addEventListener("visibilitychange", function () {
    window.clearTimeout(timer);
    timer = null;
    if (!document.hidden && !inFlight) refresh();
  });
  schedule();
})();
