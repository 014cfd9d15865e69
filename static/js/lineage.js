// The lineage view: a search's kernels as dots, the ideas that produced them as small diamonds
// between parent and children, repairs as dashed edges, the path to the best kernel in gold.
//
// Drawn as lean SVG (one path per node and per edge) with a layout of our own (see layout()):
// left to right by depth, the childless kernels of an idea side by side in rows, so a
// 2,000-kernel search is a few thousand units tall instead of 2,000 rows. Dots are zero-length
// strokes with vector-effect: non-scaling-stroke: their size is in screen pixels, shrinking
// only somewhat when zoomed out, so a whole search stays readable as coloured texture.
//
// Live: the same websocket and protocol as the search page (docs/LIVE_UPDATES.md). Events change
// the model; one re-layout per animation frame redraws, reusing each node's element.
// Untrusted text (names, idea titles, reasons) only ever goes in through textContent.
(function () {
  "use strict";
  const dataEl = document.getElementById("lineage-data");
  if (!dataEl) return;
  const cfg = JSON.parse(dataEl.textContent);
  const SVG = "http://www.w3.org/2000/svg";
  const ZERO = "00000000-0000-0000-0000-000000000000";
  // Layout units (SVG user space at zoom 1).
  const ROW = 18, DOT = 16, PACK = 8, TO_IDEA = 56, TO_KERNEL = 46;
  const LABELS = {
    pending: "Waiting", evaluating: "Evaluating", correct: "Correct", incorrect: "Incorrect",
    rejected: "Rejected: breaks a kernel rule", compile_error: "Compile error", runtime_error: "Runtime error",
    timeout: "Timed out", crashed: "Crashed", oom: "Out of memory", no_code: "No code in the reply",
    failed: "Evaluation failed", cancelled: "Not evaluated (cancelled)",
  };

  const svg = document.getElementById("lineage-svg");
  const view = document.getElementById("lineage-view");
  const edgeLayer = document.getElementById("lineage-edges");
  const haloLayer = document.getElementById("lineage-halos");
  const nodeLayer = document.getElementById("lineage-nodes");
  const labelLayer = document.getElementById("lineage-labels");
  const tip = document.getElementById("lineage-tip");
  const panel = document.getElementById("lineage-panel");

  // --- the model --------------------------------------------------------------------------
  const kernels = new Map(), ideas = new Map();
  function fromRow(columns, row) { const o = {}; columns.forEach((c, i) => { o[c] = row[i]; }); return o; }
  cfg.kernels.forEach((r) => { const k = fromRow(cfg.kernel_columns, r); kernels.set(k.id, k); });
  cfg.ideas.forEach((r) => { const i = fromRow(cfg.idea_columns, r); ideas.set(i.id, i); });
  const collapsed = new Set();  // layout keys ("k12", "i5") whose branch is folded
  const picked = [];            // kernel ids, at most two, oldest first
  let selected = null;          // a layout key
  const state = { lastSeq: cfg.seq, renders: 0 };
  window.kernelLabLineage = state;

  function ranked(k) { return k.status === "correct" && k.median_ms !== null && (!k.quarantined || (k.verified && k.approved)); }
  function label(k) { return k.name || "kernel " + k.code.slice(0, 8); }
  function speed(k) { return k.speedup_vs_eager === null || k.speedup_vs_eager === undefined ? null : k.speedup_vs_eager; }

  // Where a kernel hangs: under the kernel it repairs, else under its idea, else under its
  // parent kernel, else it is a root. Returns [parent layout key or null, edge kind].
  function attach(k) {
    if (k.repair_of_id && kernels.has(k.repair_of_id)) return ["k" + k.repair_of_id, "repair"];
    const kind = k.origin === "repair" ? "repair" : "idea";
    if (k.idea_id && ideas.has(k.idea_id)) return ["i" + k.idea_id, kind];
    if (k.parent_id && kernels.has(k.parent_id)) return ["k" + k.parent_id, k.origin === "repair" ? "repair" : "direct"];
    return [null, "root"];
  }

  function graph() {
    const children = new Map(), up = new Map(), roots = [];
    const add = (parent, key, kind) => {
      up.set(key, [parent, kind]);
      if (parent === null) { roots.push(key); return; }
      if (!children.has(parent)) children.set(parent, []);
      children.get(parent).push(key);
    };
    ideas.forEach((i) => add(i.parent_kernel_id && kernels.has(i.parent_kernel_id) ? "k" + i.parent_kernel_id : null, "i" + i.id, "idea"));
    kernels.forEach((k) => { const [p, kind] = attach(k); add(p, "k" + k.id, kind); });
    return { children, up, roots };
  }

  // --- layout -----------------------------------------------------------------------------
  // Left to right by depth, top-aligned, one skyline per depth: a node takes the first free row
  // at its depth at or below its parent's, so a branch grows to the right beside the rows of
  // its parent's siblings instead of below all of them. An idea's childless kernels are packed
  // PACK to a row; kernels with a branch of their own get a row each.
  function layout(g) {
    const pos = new Map(), hiddenCount = new Map(), free = [], xs = [0];
    function X(d) {  // after a kernel depth comes room for a packed row, then the ideas
      while (xs.length <= d) {
        const l = xs.length - 1;
        xs.push(xs[l] + (l % 2 ? TO_KERNEL : (l ? (PACK - 1) * DOT : 0) + TO_IDEA));
      }
      return xs[d];
    }
    function count(key) {
      let n = 0;
      for (const c of g.children.get(key) || []) n += (c[0] === "k" ? 1 : 0) + count(c);
      return n;
    }
    function take(d, y) { const at = Math.max(y, free[d] || 0); free[d] = at + ROW; return at; }
    function place(key, d, want) {
      want = Math.max(want, free[d] || 0);  // so the node is never below its first child
      const kids = g.children.get(key);
      if (!kids || collapsed.has(key)) {
        if (kids) hiddenCount.set(key, count(key));
        const y = take(d, want);
        pos.set(key, [X(d), y]);
        return y;
      }
      let first = null;
      if (key[0] === "i") {
        const packed = kids.filter((c) => c[0] === "k" && !g.children.has(c));
        if (packed.length) {
          first = Math.max(want, free[d + 1] || 0);
          packed.forEach((c, n) => pos.set(c, [X(d + 1) + (n % PACK) * DOT, first + Math.floor(n / PACK) * ROW]));
          free[d + 1] = first + Math.ceil(packed.length / PACK) * ROW;
        }
      }
      for (const c of kids) {
        if (pos.has(c)) continue;
        const y = place(c, d + 1, first === null ? want : first);
        if (first === null) first = y;
      }
      const y = take(d, first);
      pos.set(key, [X(d), y]);
      return y;
    }
    const lowest = () => free.reduce((a, b) => Math.max(a, b || 0), 0);
    for (const r of g.roots) place(r, 0, lowest());
    return { pos, hiddenCount, bottom: lowest() };
  }

  function bestPath(g) {
    // Ordered as searches/selectors/speedups.py: on the CPU the highest paired speedup, else the
    // fastest median; ties go to the faster, then the older kernel.
    const better = (a, b) => (cfg.paired && (a.speedup_vs_eager || 0) !== (b.speedup_vs_eager || 0)
      ? (a.speedup_vs_eager || 0) > (b.speedup_vs_eager || 0)
      : a.median_ms < b.median_ms || (a.median_ms === b.median_ms && a.id < b.id));
    let best = null;
    kernels.forEach((k) => { if (ranked(k) && (best === null || better(k, best))) best = k; });
    const path = new Set();
    let key = best ? "k" + best.id : null;
    while (key && !path.has(key)) { path.add(key); key = (g.up.get(key) || [null])[0]; }
    return { best, path };
  }

  // --- drawing ----------------------------------------------------------------------------
  const elements = new Map();  // layout key -> {node, edge}
  function make(tag, cls) { const e = document.createElementNS(SVG, tag); if (cls) e.setAttribute("class", cls); return e; }
  function dotWidth(k) {  // on-screen diameter in px: bigger is faster
    const s = speed(k);
    if (k.status !== "correct" || s === null) return 7;
    return Math.max(7, Math.min(18, 8 + 4 * Math.log2(Math.max(s, 0.5)) + 4));
  }
  function edgePath(a, b) {
    if (a[1] === b[1]) return `M${a[0]} ${a[1]}H${b[0]}`;
    const mx = (a[0] + b[0]) / 2;
    return `M${a[0]} ${a[1]}C${mx} ${a[1]} ${mx} ${b[1]} ${b[0]} ${b[1]}`;
  }
  function text(x, y, content, cls) {
    const t = make("text", cls); t.setAttribute("x", x); t.setAttribute("y", y); t.textContent = content;
    labelLayer.append(t);
  }

  let last = null;  // the last layout, for fitting and for the panel
  function render() {
    const started = performance.now();
    const g = graph(), lay = layout(g), { best, path } = bestPath(g);
    const live = new Set();
    const bestEdges = [];
    lay.pos.forEach((xy, key) => {
      live.add(key);
      let el = elements.get(key);
      if (!el) {
        const node = make("path");
        node.id = "ln-" + key;
        node.dataset.key = key;
        el = { node, edge: make("path") };
        elements.set(key, el);
      }
      const [parent, kind] = g.up.get(key);
      if (key[0] === "k") {
        const k = kernels.get(+key.slice(1));
        el.node.setAttribute("class", "kn s-" + k.status + (k.quarantined ? " q" : "") + (path.has(key) ? " best" : ""));
        el.node.setAttribute("d", `M${xy[0]} ${xy[1]}h0`);
        el.node.style.strokeWidth = `calc(var(--dot) * ${dotWidth(k)}px)`;
        el.node.dataset.code = k.code;
      } else {
        el.node.setAttribute("class", "in" + (path.has(key) ? " best" : "") + (collapsed.has(key) ? " folded" : ""));
        el.node.setAttribute("d", `M${xy[0] - 4} ${xy[1]}l4 -4l4 4l-4 4z`);
      }
      if (!el.node.isConnected) nodeLayer.append(el.node);
      if (parent !== null && lay.pos.has(parent)) {
        const onPath = path.has(key) && path.has(parent);
        el.edge.setAttribute("class", "e " + kind + (onPath ? " best" : ""));
        el.edge.setAttribute("d", edgePath(lay.pos.get(parent), xy));
        if (onPath) bestEdges.push(el.edge);
        if (!el.edge.isConnected) edgeLayer.append(el.edge);
      } else if (el.edge.isConnected) el.edge.remove();
    });
    elements.forEach((el, key) => { if (!live.has(key)) { el.node.remove(); el.edge.remove(); } });
    bestEdges.forEach((e) => edgeLayer.append(e));  // on top of the others

    // Labels and halos are few: rebuilt each time.
    labelLayer.replaceChildren();
    haloLayer.replaceChildren();
    lay.pos.forEach((xy, key) => {
      if (key[0] !== "k") return;
      const k = kernels.get(+key.slice(1));
      const s = speed(k);
      if (s !== null && k.status === "correct" && (g.children.has(key) || path.has(key))) {
        text(xy[0] + 9, xy[1] - 6, s.toFixed(2) + "×", "sp" + (path.has(key) ? " best" : ""));
      }
    });
    lay.hiddenCount.forEach((n, key) => { const xy = lay.pos.get(key); text(xy[0] + 9, xy[1] + 4, "+" + n, "more"); });
    const halo = (key, cls) => {
      const xy = lay.pos.get(key);
      if (!xy) return;
      const h = make("path", "halo " + cls); h.setAttribute("d", `M${xy[0]} ${xy[1]}h0`); haloLayer.append(h);
    };
    if (best) halo("k" + best.id, "best");
    picked.forEach((id) => halo("k" + id, "picked"));
    if (selected) halo(selected, "selected");

    last = { g, lay, best, path };
    if (state.renders) sizeStage(lay);
    state.renders += 1;
    state.lastRenderMs = performance.now() - started;
    document.getElementById("lineage-count").textContent = `${kernels.size} kernels · ${ideas.size} ideas`;
    updateBestLine(best);
    if (selected) showPanel(selected);
  }

  let due = false;
  function schedule() { if (!due) { due = true; requestAnimationFrame(() => { due = false; render(); }); } }

  function updateBestLine(best) {
    const line = document.getElementById("lineage-best");
    if (!best) { line.textContent = "No correct kernel yet."; return; }
    line.textContent = `Best: ${label(best)} · ${Number(best.median_ms.toPrecision(4))} ms` +
      (speed(best) !== null ? ` · ${speed(best).toFixed(2)}× eager` : "") +
      (best.speedup_vs_compile !== null ? ` · ${best.speedup_vs_compile.toFixed(2)}× compile` : "");
  }

  // --- zoom and pan -------------------------------------------------------------------------
  const zoom = { s: 1, x: 20, y: 20 };
  function applyZoom() {
    view.setAttribute("transform", `translate(${zoom.x} ${zoom.y}) scale(${zoom.s})`);
    // Labels hide when zoomed far out; shown, they are never under 11 px on screen (lineage.css).
    svg.classList.toggle("far", zoom.s < 0.8);
    svg.style.setProperty("--zoom", String(zoom.s));
    // Dots keep their size on screen when zooming in, and shrink (not below a third) zooming out.
    svg.style.setProperty("--dot", String(Math.max(0.33, Math.min(1, Math.pow(zoom.s, 0.6)))));
  }
  function zoomAt(px, py, factor) {
    const s = Math.max(0.02, Math.min(6, zoom.s * factor));
    zoom.x = px - (px - zoom.x) * (s / zoom.s); zoom.y = py - (py - zoom.y) * (s / zoom.s); zoom.s = s;
    applyZoom();
  }
  function bounds() {
    let x1 = Infinity, y1 = Infinity, x2 = -Infinity, y2 = -Infinity;
    last.lay.pos.forEach(([x, y]) => { x1 = Math.min(x1, x); y1 = Math.min(y1, y); x2 = Math.max(x2, x); y2 = Math.max(y2, y); });
    return x1 === Infinity ? [0, 0, 1, 1] : [x1, y1, x2 + 40, y2 + 10];
  }
  function fit(whole) {  // whole: everything in view; else the full width, from the top
    const [x1, y1, x2, y2] = bounds(), w = svg.clientWidth || 800, h = svg.clientHeight || 600;
    zoom.s = Math.min(1.5, (w - 40) / (x2 - x1), whole ? (h - 40) / (y2 - y1) : Infinity);
    zoom.x = 20 - x1 * zoom.s; zoom.y = 30 - y1 * zoom.s;  // room above the first row's labels
    applyZoom();
  }
  // A small tree gets a small box; it grows with the search, up to most of the window.
  function sizeStage(lay) {
    const needed = lay.bottom * zoom.s + 60, most = Math.max(320, window.innerHeight * 0.72);
    const now = svg.getBoundingClientRect().height;
    if (needed > now + 1 && now < most) svg.style.height = Math.min(most, needed) + "px";
  }
  svg.addEventListener("wheel", (e) => {
    e.preventDefault();
    const r = svg.getBoundingClientRect();
    zoomAt(e.clientX - r.left, e.clientY - r.top, Math.exp(-e.deltaY * 0.0015));
  }, { passive: false });
  let drag = null;
  svg.addEventListener("pointerdown", (e) => { drag = { x: e.clientX, y: e.clientY, zx: zoom.x, zy: zoom.y, moved: false }; });
  svg.addEventListener("pointermove", (e) => {
    if (drag && (drag.moved || Math.abs(e.clientX - drag.x) + Math.abs(e.clientY - drag.y) > 4)) {
      if (!drag.moved) svg.setPointerCapture(e.pointerId);
      drag.moved = true; zoom.x = drag.zx + e.clientX - drag.x; zoom.y = drag.zy + e.clientY - drag.y; applyZoom();
      tip.hidden = true;
    }
  });
  svg.addEventListener("pointerup", () => { setTimeout(() => { drag = null; }); });
  document.getElementById("lineage-fit").addEventListener("click", () => fit(true));
  document.getElementById("lineage-width").addEventListener("click", () => fit(false));
  document.getElementById("lineage-in").addEventListener("click", () => zoomAt(svg.clientWidth / 2, svg.clientHeight / 2, 1.5));
  document.getElementById("lineage-out").addEventListener("click", () => zoomAt(svg.clientWidth / 2, svg.clientHeight / 2, 1 / 1.5));
  // With the picture focused: + and - zoom, arrows pan, 0 fits the width.
  svg.addEventListener("keydown", (e) => {
    const w = svg.clientWidth, h = svg.clientHeight, step = 60;
    const moves = { ArrowLeft: [step, 0], ArrowRight: [-step, 0], ArrowUp: [0, step], ArrowDown: [0, -step] };
    if (e.key === "+" || e.key === "=") zoomAt(w / 2, h / 2, 1.25);
    else if (e.key === "-") zoomAt(w / 2, h / 2, 0.8);
    else if (e.key === "0") fit(false);
    else if (moves[e.key]) { zoom.x += moves[e.key][0]; zoom.y += moves[e.key][1]; applyZoom(); }
    else return;
    e.preventDefault();
  });
  document.getElementById("lineage-expand").addEventListener("click", () => { collapsed.clear(); schedule(); });

  // --- hover, select, collapse, compare -------------------------------------------------------
  function kernelFacts(k) {
    const idea = k.idea_id && ideas.get(k.idea_id);
    const facts = [["Verdict", LABELS[k.status] || k.status]];
    if (k.quarantined) facts[0][1] += " · quarantined";
    if (idea) facts.push(["Idea", idea.title]);
    else facts.push(["Idea", k.origin === "seed" ? "none: the starting kernel" : k.origin]);
    if (k.origin === "repair") facts.push(["Repair", "a fix of a kernel that did not compile"]);
    if (k.median_ms !== null) facts.push(["Time", Number(k.median_ms.toPrecision(4)) + " ms (median)"]);
    if (speed(k) !== null) facts.push(["Speedup", speed(k).toFixed(2) + "× eager" +
      (k.speedup_vs_compile !== null ? " · " + k.speedup_vs_compile.toFixed(2) + "× compile" : "")]);
    facts.push(["Round", String(k.round)]);
    if (k.reason) facts.push(["Reason", k.reason]);
    return facts;
  }
  function ideaFacts(i) {
    const kids = (last.g.children.get("i" + i.id) || []).filter((c) => c[0] === "k").map((c) => kernels.get(+c.slice(1)));
    return [["Idea", i.title], ["Round", String(i.round) + " · " + i.origin],
            ["Kernels", `${kids.filter((k) => k.status === "correct").length} correct of ${kids.filter((k) => k.status !== "cancelled").length}`]];
  }
  function factList(facts, into) {
    const dl = document.createElement("dl");
    for (const [name, value] of facts) {
      const dt = document.createElement("dt"), dd = document.createElement("dd");
      dt.textContent = name; dd.textContent = value; dl.append(dt, dd);
    }
    into.append(dl);
  }
  function keyOf(target) { const n = target.closest && target.closest("[data-key]"); return n ? n.dataset.key : null; }
  svg.addEventListener("pointerover", (e) => {
    const key = keyOf(e.target);
    if (!key || (drag && drag.moved)) { tip.hidden = true; return; }
    tip.replaceChildren();
    const strong = document.createElement("strong");
    if (key[0] === "k") { const k = kernels.get(+key.slice(1)); strong.textContent = label(k); tip.append(strong); factList(kernelFacts(k), tip); }
    else { const i = ideas.get(+key.slice(1)); strong.textContent = "Idea"; tip.append(strong); factList(ideaFacts(i), tip); }
    const r = svg.getBoundingClientRect();
    tip.style.left = Math.max(0, Math.min(e.clientX - r.left + 14, r.width - 280)) + "px";
    tip.style.top = (e.clientY - r.top + 14) + "px";
    tip.hidden = false;
  });
  svg.addEventListener("pointerout", (e) => { if (keyOf(e.target)) tip.hidden = true; });
  svg.addEventListener("click", (e) => {
    if (drag && drag.moved) return;
    const key = keyOf(e.target);
    if (!key) return;
    if (key[0] === "i") toggle(key);
    else if (e.shiftKey) pick(+key.slice(1));  // a shortcut for the panel's "Pick to compare"
    selected = key;
    schedule();
  });
  svg.addEventListener("dblclick", (e) => {
    const key = keyOf(e.target);
    if (key && key[0] === "k") location.href = cfg.kernel_url.replace(ZERO, kernels.get(+key.slice(1)).code);
  });
  function toggle(key) { if (collapsed.has(key)) collapsed.delete(key); else collapsed.add(key); schedule(); }

  function button(text, cls, onClick) {
    const b = document.createElement("button"); b.type = "button"; b.className = cls; b.textContent = text;
    b.addEventListener("click", onClick); return b;
  }
  function showPanel(key) {
    panel.replaceChildren();
    const h = document.createElement("h3");
    const actions = document.createElement("div"); actions.className = "actions";
    if (key[0] === "k") {
      const k = kernels.get(+key.slice(1));
      const a = document.createElement("a"); a.href = cfg.kernel_url.replace(ZERO, k.code); a.textContent = label(k);
      a.id = "lineage-open";
      h.append(a); panel.append(h); factList(kernelFacts(k), panel);
      const isPicked = picked.includes(k.id);
      actions.append(button(isPicked ? "Unpick" : "Pick to compare", "secondary small", () => { pick(k.id); }));
      actions.lastChild.id = "lineage-pick";
    } else {
      h.textContent = "Idea"; panel.append(h); factList(ideaFacts(ideas.get(+key.slice(1))), panel);
    }
    if (last.g.children.has(key)) {
      actions.append(button(collapsed.has(key) ? "Expand branch" : "Collapse branch", "secondary small", () => toggle(key)));
      actions.lastChild.id = "lineage-fold";
    }
    panel.append(actions);
  }
  const compareButton = document.getElementById("lineage-compare");
  function pick(id) {
    const at = picked.indexOf(id);
    if (at >= 0) picked.splice(at, 1); else { picked.push(id); if (picked.length > 2) picked.shift(); }
    compareButton.disabled = picked.length !== 2;
    document.getElementById("lineage-picked").textContent = picked.length === 2
      ? `Picked ${picked.map((p) => label(kernels.get(p))).join(" and ")}.`
      : `Select a kernel, then "Pick to compare" (${picked.length} of 2 picked).`;
    schedule();
  }
  compareButton.addEventListener("click", () => {
    if (picked.length !== 2) return;
    const q = new URLSearchParams(picked.map((id) => ["k", kernels.get(id).code]));
    location.href = cfg.compare_url + "?" + q.toString();
  });

  // --- live events --------------------------------------------------------------------------
  function apply(message) {
    const p = message.payload || {};
    if (message.kind === "kernel.created" || message.kind === "kernel.updated") {
      kernels.set(p.id, p);
      schedule();
    } else if (message.kind === "idea.created") {
      ideas.set(p.id, p); schedule();
    } else if (message.kind === "search.status" && p.status) {  // the badge says what the search page says
      const badge = document.getElementById("search-status");
      if (badge) {
        badge.className = "badge " + p.status; badge.dataset.status = p.status;
        badge.textContent = p.status.charAt(0).toUpperCase() + p.status.slice(1);
      }
    }
  }
  svg.style.height = "260px";
  render();
  fit(false);
  sizeStage(last.lay);
  // Drawn once the first frame with the picture has been painted (for bench_lineage).
  requestAnimationFrame(() => setTimeout(() => { document.body.dataset.lineageDrawnMs = String(Math.round(performance.now())); }));
  state.firstRenderMs = state.lastRenderMs;
  window.kernelLabFollowSearch(cfg.ws, state, apply);
})();
