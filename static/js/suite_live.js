// A suite's page while its problems are validated, its kernels judged or its searches run:
// fetch the server-drawn scores again every few seconds, and stop once nothing is in progress.
(function () {
  "use strict";
  const box = document.getElementById("suite-live");
  if (!box || box.dataset.busy !== "true") return;
  const EVERY_MS = 4000;
  function refresh() {
    fetch(box.dataset.url, { credentials: "same-origin", redirect: "error" })  // not a login page
      .then((r) => (r.ok ? r.text() : Promise.reject(r.status)))
      .then((html) => {
        // Parsed in a detached document (inert: nothing in it runs), then moved in.
        const fresh = new DOMParser().parseFromString(html, "text/html").body;
        const busy = !!fresh.querySelector("#suite-progress");
        box.replaceChildren(...fresh.childNodes);
        box.dataset.busy = String(busy);
        if (busy) setTimeout(refresh, EVERY_MS);
      })
      .catch(() => setTimeout(refresh, 3 * EVERY_MS));
  }
  setTimeout(refresh, EVERY_MS);
})();
