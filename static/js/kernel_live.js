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

  const text = document.getElementById("kernel-progress-text") || line;

  // The page's verdict sections, rendered again by the server: once its run began (the status
  // and queue rows move on), and once the verdict has landed (the progress line goes).
  function redraw(final) {
    fetch(window.location.href, { credentials: "same-origin" })
      .then((response) => (response.ok ? response.text() : Promise.reject(response.status)))
      .then((html) => {
        if (!final && settled) return;  // the verdict's own redraw is under way: this one is older
        const fresh = new DOMParser().parseFromString(html, "text/html").getElementById("kernel-body");
        if (!fresh) return Promise.reject("no verdict section");
        body.replaceChildren(...fresh.childNodes);
        if (!final) return;
        line.remove();
        if (live.pause) live.pause();
      })
      .catch(() => { if (final) window.setTimeout(() => redraw(true), 3000); });
  }
  function showVerdict() { redraw(true); }
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
          text.textContent = state.text;
          if (state.phase && !line.dataset.phase) redraw(false);  // its run began: the queue row is old news
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
