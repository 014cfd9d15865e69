// The kernel page while its verdict is pending: where the evaluation stands (queue position, then
// its phase and elapsed time), then the page's verdict sections swapped for freshly rendered ones,
// so the verdict appears without a reload. The kernel's event stream (its search's, or its
// problem's for a kernel of no search; static/js/live_socket.js) says when something changed;
// while the socket is open the status is read on each event and every few seconds for the clock,
// else every second.
(function () {
  "use strict";
  const line = document.getElementById("kernel-progress");
  const body = document.getElementById("kernel-body");
  if (!line || !body) return;
  const live = { lastSeq: parseInt(line.dataset.after || "0", 10) || 0 };
  let settled = false;
  let timer = null;

  function showVerdict() {
    fetch(window.location.href, { credentials: "same-origin" })
      .then((response) => (response.ok ? response.text() : Promise.reject(response.status)))
      .then((html) => {
        const fresh = new DOMParser().parseFromString(html, "text/html").getElementById("kernel-body");
        if (!fresh) return Promise.reject("no verdict section");
        body.replaceChildren(...fresh.childNodes);
        line.remove();
        if (live.pause) live.pause();
      })
      .catch(() => window.setTimeout(showVerdict, 3000));
  }
  function socketOpen() { return live.ws && live.ws.readyState === WebSocket.OPEN; }
  function schedule(ms) {
    window.clearTimeout(timer);
    timer = window.setTimeout(poll, ms);
  }
  function poll() {
    if (settled) return;
    fetch(line.dataset.statusUrl, { headers: { Accept: "application/json" }, credentials: "same-origin" })
      .then((response) => (response.ok ? response.json() : null))
      .then((state) => {
        if (state && state.settled) { settled = true; showVerdict(); return; }
        if (state) {
          line.textContent = state.text;
          if (state.phase) line.dataset.phase = state.phase; else delete line.dataset.phase;
        }
        schedule(socketOpen() ? 3000 : 1000);
      })
      .catch(() => schedule(3000));
  }
  if (line.dataset.ws && window.kernelLabFollowSearch) {
    const code = line.dataset.kernel;
    window.kernelLabFollowSearch(line.dataset.ws, live, (message) => {
      const p = message.payload || {};
      if (p.code === code || p.kernel === code) schedule(0);  // this kernel's status or phase moved
    });
  }
  schedule(1000);
})();
