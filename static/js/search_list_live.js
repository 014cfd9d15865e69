// The Searches list while some of its searches run: each active one's event stream
// (static/js/live_socket.js) says when its status, progress or best kernel moved, and the rows
// are drawn again by the server (one fetch of this page, at most every second), so the list shows
// the numbers a reload would. Without sockets it reads the page every 5 s while any row is active.
(function () {
  "use strict";
  const ACTIVE = ["queued", "running"];
  const followed = new Map();  // search code -> its socket's state
  let due = null;
  let fallback = null;

  function rows() { return document.getElementById("search-rows"); }
  function activeRows() {
    const body = rows();
    return body ? Array.from(body.querySelectorAll("tr[data-search]")).filter((r) => ACTIVE.includes(r.dataset.status)) : [];
  }
  function refresh() {
    due = null;
    fetch(window.location.href, { credentials: "same-origin" })
      .then((response) => (response.ok ? response.text() : Promise.reject(response.status)))
      .then((html) => {
        const fresh = new DOMParser().parseFromString(html, "text/html").getElementById("search-rows");
        const body = rows();
        if (fresh && body) body.replaceChildren(...fresh.childNodes);
        follow();
      })
      .catch(() => soon(5000));
  }
  function soon(ms) { if (due === null) due = window.setTimeout(refresh, ms); }
  function follow() {
    const active = new Set();
    activeRows().forEach((row) => {
      const code = row.dataset.search;
      active.add(code);
      if (followed.has(code) || !window.kernelLabFollowSearch) return;
      const live = { lastSeq: parseInt(row.dataset.after || "0", 10) || 0 };
      followed.set(code, live);
      window.kernelLabFollowSearch("/ws/searches/" + code + "/", live, (message) => {
        if (["search.status", "search.progress", "kernel.updated"].includes(message.kind)) soon(1000);
      });
    });
    followed.forEach((live, code) => {  // finished: its row says so, nothing more to hear
      if (!active.has(code)) { if (live.pause) live.pause(); followed.delete(code); }
    });
    window.clearInterval(fallback);
    fallback = null;
    const open = Array.from(followed.values()).some((l) => l.ws && l.ws.readyState === WebSocket.OPEN);
    if (active.size && !open) fallback = window.setInterval(() => soon(0), 5000);
  }
  follow();
  // The sockets open after this first pass: look again once they had the time to.
  window.setTimeout(follow, 3000);
})();
