// The kernel page while its verdict is pending: ask the server where the evaluation stands every
// second (queue position, then time evaluating), and once it has settled, swap the page's verdict
// sections for freshly rendered ones, so the verdict appears without a reload.
(function () {
  "use strict";
  const line = document.getElementById("kernel-progress");
  const body = document.getElementById("kernel-body");
  if (!line || !body) return;

  function showVerdict() {
    fetch(window.location.href, { credentials: "same-origin" })
      .then((response) => (response.ok ? response.text() : Promise.reject(response.status)))
      .then((html) => {
        const fresh = new DOMParser().parseFromString(html, "text/html").getElementById("kernel-body");
        if (!fresh) return Promise.reject("no verdict section");
        body.replaceChildren(...fresh.childNodes);
        line.remove();
      })
      .catch(() => window.setTimeout(showVerdict, 3000));
  }
  function poll() {
    fetch(line.dataset.statusUrl, { headers: { Accept: "application/json" }, credentials: "same-origin" })
      .then((response) => (response.ok ? response.json() : null))
      .then((state) => {
        if (state && state.settled) { showVerdict(); return; }
        if (state) line.textContent = state.text;
        window.setTimeout(poll, 1000);
      })
      .catch(() => window.setTimeout(poll, 3000));
  }
  window.setTimeout(poll, 1000);
})();
