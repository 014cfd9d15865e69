// The search page: fold/unfold, filter, pick two nodes to compare, and live updates.
//
// Live updates: the search's websocket (live_socket.js) hands over each event once, in order;
// applying one is idempotent (a node is created once, then updated in place). Untrusted text (kernel names, idea titles) only ever goes in through
// textContent, never parsed as markup.
(function () {
  "use strict";
  const configEl = document.getElementById("live-config");
  if (!configEl) return;
  const cfg = JSON.parse(configEl.textContent);
  const ZERO = "00000000-0000-0000-0000-000000000000";
  const root = document.getElementById("tree-root");
  const state = { lastSeq: cfg.seq };
  const nodes = new Map(); // kernel id -> its view (searches/selectors/kernel_view.py), with its baseline
  window.kernelLabLive = state;

  function el(tag, cls) {
    const e = document.createElement(tag);
    if (cls) e.className = cls;
    return e;
  }
  function num(v, digits) { return v === null || v === undefined ? "" : String(Number(v.toPrecision(digits))); }
  function setText(id, text) { const e = document.getElementById(id); if (e) e.textContent = text; }
  function setCount(id, n, noun) { setText(id, String(n)); setText(id + "-noun", noun + (n === 1 ? "" : "s")); }

  // --- the tree -------------------------------------------------------------------------
  // Markup: searches/views/search_tree.py's kernel_row, the one definition. Each li.k carries its kernel's
  // view (searches/selectors/kernel_view.py) as JSON in data-k: the same dict the live events carry, so
  // the page's model of a node is that dict. A kernel the page has not drawn is a copy of the empty row
  // in <template id="kernel-row">, rendered by the same function, then filled as any update fills a row.
  const rowTemplate = document.getElementById("kernel-row");
  root.querySelectorAll("li.k").forEach((li) => nodes.set(+li.id.slice(2), JSON.parse(li.dataset.k)));

  function childList(li) {
    let ul = li.querySelector(":scope > ul");
    if (!ul) { ul = el("ul"); li.append(ul); }
    return ul;
  }
  function container(parentKernelId, ideaId) {
    const idea = ideaId && document.getElementById("i-" + ideaId);
    if (idea) return childList(idea);
    const parent = parentKernelId && document.getElementById("k-" + parentKernelId);
    if (parent) return childList(parent);
    return root;
  }
  // The row's optional part with this class: server rows leave empty ones out, so a missing one is
  // copied from the template's row, in the template's order.
  function part(row, cls) {
    let e = row.querySelector(":scope > ." + cls);
    if (e) return e;
    const order = Array.from(rowTemplate.content.querySelector(".row").children);
    const at = order.findIndex((c) => c.classList.contains(cls));
    e = order[at].cloneNode(false);
    const next = order.slice(at + 1).map((c) => c.className && row.querySelector(":scope > ." + c.classList[0])).find(Boolean);
    row.insertBefore(e, next || null);
    return e;
  }

  function newKernelRow(k) {
    const li = rowTemplate.content.firstElementChild.cloneNode(true);
    li.id = "k-" + k.id;
    const link = li.querySelector(".row > a");
    if (link) link.href = cfg.kernel_url.replace(ZERO, k.code);
    const pick = li.querySelector("input.pick");
    if (pick) pick.value = k.code;
    return li;
  }

  function timing(k) {
    if (k.median_ms === null) return "";
    const parts = [num(k.median_ms, 4) + " ms"];
    if (k.speedup_vs_eager !== null) parts.push(k.speedup_vs_eager.toFixed(2) + "× " + (k.baseline || "eager"));
    if (k.speedup_vs_compile !== null) parts.push(k.speedup_vs_compile.toFixed(2) + "× compile");
    if (k.speed_of_light !== null && k.speed_of_light !== undefined) parts.push(Math.round(k.speed_of_light * 100) + "% SOL");
    return parts.join(" · ");
  }

  function applyKernel(payload) {
    let li = document.getElementById("k-" + payload.id);
    if (!li) {
      li = newKernelRow(payload);
      container(payload.parent_id, payload.idea_id).append(li);
      setCount("kernel-count", nodes.size + 1, "kernel");
    }
    // A verdict's event carries the eager time its speedup used; other events keep the known one.
    const known = nodes.get(payload.id) || {};
    const k = { ...payload, eager_ms: payload.eager_ms ?? known.eager_ms ?? null,
                baseline: payload.baseline || known.baseline || "eager" };
    const [markText, label] = cfg.marks[k.status] || ["?", k.status];
    li.className = "k s-" + k.status + (k.quarantined ? " q" : "");
    li.dataset.k = JSON.stringify(k);
    const row = li.querySelector(":scope > .row");
    row.querySelector(".m").textContent = markText;
    row.querySelector("a, .n").textContent = k.name || "kernel " + k.code.slice(0, 8);
    row.querySelector("small").textContent = "R" + k.round + " · " + label;
    part(row, "t").textContent = timing(k);
    part(row, "qm").textContent = k.quarantined ? cfg.quarantine[0] + " quarantined" : "";
    part(row, "vb").textContent = k.verified ? "verified rerun" : "";
    nodes.set(k.id, k);
  }

  function applyIdea(idea) {
    let li = document.getElementById("i-" + idea.id);
    if (!li) {
      li = el("li", "i");
      li.id = "i-" + idea.id;
      const row = el("div", "row idea");
      const mark = el("i", "m"); mark.textContent = "◇";
      row.append(mark, el("span", "title"), el("small"), el("span", "rate"));
      li.append(row, el("ul"));
      container(idea.parent_kernel_id, null).append(li);
      setCount("idea-count", root.querySelectorAll("li.i").length, "idea");
    }
    li.dataset.r = idea.round;
    const row = li.querySelector(":scope > .row");
    row.querySelector(".title").textContent = idea.title;
    row.querySelector("small").textContent = "R" + idea.round + " · " + idea.origin;
  }

  // A quarantined kernel ranks once verified and approved.
  function ranked(n) { return n.status === "correct" && n.median_ms !== null && (!n.quarantined || (n.verified && n.approved)); }
  // Ordered as searches/selectors/speedups.py: on the CPU the highest paired speedup, else the
  // fastest median; ties go to the faster, then the older kernel.
  function better(a, aId, b, bId) {
    const ae = a.speedup_vs_eager || 0, be = b.speedup_vs_eager || 0;
    if (cfg.paired && ae !== be) return ae > be;
    return a.median_ms < b.median_ms || (a.median_ms === b.median_ms && aId < bId);
  }
  function bestKernel() {
    let bestId = null, best = null;
    nodes.forEach((n, id) => {
      if (ranked(n) && (best === null || better(n, id, best, bestId))) { best = n; bestId = id; }
    });
    return bestId;
  }
  function markBestPath(bestId) {
    root.querySelectorAll("li.best").forEach((li) => li.classList.remove("best"));
    const seen = new Set();
    let id = bestId;
    while (id !== null && id !== undefined && !seen.has(id) && nodes.has(id)) {
      seen.add(id);
      const n = nodes.get(id);
      const li = document.getElementById("k-" + id); if (li) li.classList.add("best");
      const idea = n.idea_id && document.getElementById("i-" + n.idea_id); if (idea) idea.classList.add("best");
      id = n.parent_id;
    }
  }
  // "Best: 0.2500 ms · 4.00× eager · 3.20× compile", worded as templates/searches/search/_tree.html.
  function showBestLine(bestId) {
    const line = document.getElementById("best-line");
    if (!line || bestId === null) return;
    const n = nodes.get(bestId);
    const strong = el("strong"); strong.textContent = n.median_ms.toFixed(4) + " ms";
    let tail = "";
    if (n.speedup_vs_eager) tail += " · " + n.speedup_vs_eager.toFixed(2) + "× " + n.baseline
      + (n.eager_ms ? " (" + n.baseline + " " + n.eager_ms.toFixed(4) + " ms)" : "");
    if (n.speedup_vs_compile) tail += " · " + n.speedup_vs_compile.toFixed(2) + "× compile";
    line.replaceChildren("Best: ", strong, tail);
    line.hidden = false;
  }
  // Each idea's "c/e correct" badge, counted like searches.selectors.search_idea_stats.
  function showIdeaRates() {
    const counts = new Map();
    nodes.forEach((n) => {
      if (!n.idea_id || UNSETTLED.has(n.status) || n.status === "cancelled") return;
      const c = counts.get(n.idea_id) || [0, 0];
      c[1] += 1; if (n.status === "correct") c[0] += 1;
      counts.set(n.idea_id, c);
    });
    root.querySelectorAll("li.i").forEach((li) => {
      const c = counts.get(+li.id.slice(2));
      const rate = li.querySelector(":scope > .row > .rate");
      if (rate) rate.textContent = c ? `${c[0]}/${c[1]} correct` : "";
    });
  }
  // The filter offers every status and round present, in the server's order.
  function showFilterOptions() {
    const statuses = new Set(), rounds = new Set();
    nodes.forEach((n) => { statuses.add(n.status); rounds.add(n.round); });
    const sync = (select, values) => {
      if (!select) return;
      const have = new Set(Array.from(select.options).map((o) => o.value));
      if (values.every(([v]) => have.has(v))) return;
      const chosen = select.value;
      const options = [["", "all"], ...values].map(([v, text]) => {
        const o = el("option"); o.value = v; o.textContent = text; return o;
      });
      select.replaceChildren(...options);
      select.value = chosen;
    };
    sync(filterStatus, [...Array.from(statuses).sort().map((s) => [s, (cfg.marks[s] || ["", s])[1]]),
                        ["quarantined", "Quarantined"]]);
    sync(filterRound, Array.from(rounds).sort((a, b) => a - b).map((r) => [String(r), String(r)]));
  }
  const UNSETTLED = new Set(["pending", "evaluating"]);

  // --- filter -----------------------------------------------------------------------------
  const filterStatus = document.getElementById("filter-status");
  const filterRound = document.getElementById("filter-round");
  function matches(li) {
    const s = filterStatus ? filterStatus.value : "", r = filterRound ? filterRound.value : "";
    const n = nodes.get(+li.id.slice(2)) || {};
    const statusOk = !s || (s === "quarantined" ? n.quarantined : n.status === s);
    return statusOk && (!r || String(n.round) === r);
  }
  function applyFilter() {
    const active = (filterStatus && filterStatus.value) || (filterRound && filterRound.value);
    const all = Array.from(root.querySelectorAll("li"));
    if (!active) { all.forEach((li) => { li.hidden = false; }); return; }
    for (let i = all.length - 1; i >= 0; i--) {  // children come after their parents
      const li = all[i];
      const childShown = Array.from(li.querySelectorAll(":scope > ul > li")).some((c) => !c.hidden);
      li.hidden = !(childShown || (li.classList.contains("k") && matches(li)));
    }
  }
  for (const select of [filterStatus, filterRound]) {
    if (!select) continue;
    select.addEventListener("change", () => {
      applyFilter();
      const url = new URL(location.href);
      for (const s of [filterStatus, filterRound]) { if (s.value) url.searchParams.set(s.name, s.value); else url.searchParams.delete(s.name); }
      history.replaceState(null, "", url);
    });
  }

  // --- folding and picking ----------------------------------------------------------------
  // Clicking a node's mark folds or unfolds what grew from it.
  root.addEventListener("click", (event) => {
    const mark = event.target.closest(".row > i.m");
    if (!mark) return;
    const li = mark.closest("li");
    if (li.querySelector(":scope > ul > li")) li.classList.toggle("folded");
  });
  const compareButton = document.getElementById("compare-picked");
  function updatePicked() {
    const n = root.querySelectorAll("input.pick:checked").length;
    if (compareButton) compareButton.disabled = n !== 2;
    setText("picked-note", n === 2 ? "Two kernels picked." : `Tick two nodes to compare them (${n} picked).`);
  }
  root.addEventListener("change", (event) => { if (event.target.matches("input.pick")) updatePicked(); });
  updatePicked();

  // --- search status and progress ----------------------------------------------------------
  const elapsed = document.getElementById("p-elapsed");
  function applyStatus(p) {
    const badge = document.getElementById("search-status");
    if (badge && p.status) {
      badge.className = "badge " + p.status; badge.dataset.status = p.status;
      badge.textContent = p.status.charAt(0).toUpperCase() + p.status.slice(1);
      document.querySelectorAll("form[data-when]").forEach((f) => { f.hidden = !f.dataset.when.split(" ").includes(p.status); });
    }
    const reason = document.getElementById("stop-reason");
    if (reason && p.stop_reason) { reason.textContent = p.stop_reason; reason.hidden = false; }
    if (p.current_round !== undefined) setText("p-round", String(p.current_round));
    if (elapsed && p.started_at) {
      elapsed.dataset.started = p.started_at;
      if (p.finished_at) elapsed.dataset.finished = p.finished_at;
      const seconds = typeof p.elapsed_s === "number" ? p.elapsed_s : (Date.now() - Date.parse(p.started_at)) / 1000;
      elapsed.textContent = Math.max(0, Math.round(seconds)) + " s";
    }
  }
  function applyProgress(p) {
    setText("p-evaluated", String(p.candidates_evaluated));
    setText("p-tokens", String((p.tokens_in || 0) + (p.tokens_out || 0)));
    setText("p-cost", Number(p.cost_usd || 0).toFixed(4));
    if (p.current_round !== undefined) setText("p-round", String(p.current_round));
    const bar = document.getElementById("progress-bar");
    if (bar) { bar.value = Math.min(p.candidates_evaluated, +bar.max); bar.textContent = ""; }
  }
  setInterval(() => {
    if (!elapsed || !elapsed.dataset.started || elapsed.dataset.finished) return;
    const badge = document.getElementById("search-status");
    if (badge && ["cancelled", "completed", "failed", "paused"].includes(badge.dataset.status)) return;
    elapsed.textContent = Math.max(0, Math.round((Date.now() - Date.parse(elapsed.dataset.started)) / 1000)) + " s";
  }, 1000);

  // --- the chart and the ideas table ---------------------------------------------------------
  // Both are drawn by the server: after a verdict lands, fetch them again, at most once every
  // INSIGHTS_GAP_MS, the last change always included.
  const INSIGHTS_GAP_MS = 2000;
  const insights = document.getElementById("insights");
  let insightsDue = null, insightsAt = 0;
  function refreshInsights() {
    if (!insights || !cfg.insights_url || insightsDue !== null) return;
    insightsDue = setTimeout(() => {
      insightsAt = Date.now();
      fetch(cfg.insights_url, { credentials: "same-origin", redirect: "error" })  // not a login page
        .then((r) => (r.ok ? r.text() : Promise.reject(r.status)))
        .then((html) => {
          // Parsed in a detached document (inert: nothing in it runs), then moved in.
          const fresh = new DOMParser().parseFromString(html, "text/html").body;
          // The queue note belongs to the progress card, above the tree.
          const queue = fresh.querySelector("#queue-note-fresh"), note = document.getElementById("queue-note");
          if (queue) { if (note) { note.textContent = queue.textContent; note.hidden = !queue.textContent.trim(); } queue.remove(); }
          insights.replaceChildren(...fresh.childNodes);
        })
        .catch(() => {})  // the next event tries again; the page stays as it was
        .finally(() => { insightsDue = null; });
    }, Math.max(0, insightsAt + INSIGHTS_GAP_MS - Date.now()));
  }
  // --- the websocket ------------------------------------------------------------------------
  let pending = false;
  function afterTreeChange() {
    if (pending) return;
    pending = true;
    requestAnimationFrame(() => {
      pending = false;
      const bestId = bestKernel();
      markBestPath(bestId); showBestLine(bestId); showIdeaRates(); showFilterOptions(); applyFilter();
    });
  }
  function apply(message) {
    const p = message.payload || {};
    switch (message.kind) {
      case "kernel.created": case "kernel.updated":
        applyKernel(p); afterTreeChange();
        if (!UNSETTLED.has(p.status)) refreshInsights();
        break;
      case "idea.created": applyIdea(p); afterTreeChange(); refreshInsights(); break;
      case "search.status": applyStatus(p); break;
      case "search.progress": applyProgress(p); break;
      case "round.started": setText("p-round", String(p.round)); break;
      default: break;  // kinds this page does not show
    }
  }
  window.kernelLabFollowSearch(cfg.ws, state, apply);
})();
