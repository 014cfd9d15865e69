// The search websocket, shared by the search page and the lineage view (docs/LIVE_UPDATES.md).
//
// followSearch(path, state, apply) connects to `path?after=<state.lastSeq>` and calls
// apply(message) once per sequence number, in order: a number already applied is dropped, a gap
// closes the socket so the reconnect replays it. On close it reconnects after a random wait in
// [0, back-off] (back-off 0.25 s doubling to 5 s): after a server restart a crowd of tabs comes
// back spread out, not in lockstep. Not when the server says the login or the search is gone.
// `state` gains ws, retry, stopped, applied and the controls reconnect(), pause(), resume().
// #live-state shows the connection's state; body[data-live-seq] the last applied number.
(function () {
  "use strict";
  function setLive(text) { const e = document.getElementById("live-state"); if (e) e.textContent = text; }

  window.kernelLabFollowSearch = function (path, state, apply) {
    Object.assign(state, { ws: null, retry: 0, stopped: false, applied: 0 });

    function onMessage(event) {
      let message;
      try { message = JSON.parse(event.data); } catch (e) { return; }
      if (typeof message.seq !== "number" || message.seq <= state.lastSeq) return;  // a duplicate
      if (message.seq > state.lastSeq + 1) { state.ws.close(); return; }  // a gap: reconnect and replay
      apply(message);
      state.lastSeq = message.seq;
      state.applied += 1;
      document.body.dataset.liveSeq = String(state.lastSeq);
    }

    function connect() {
      if (state.stopped) return;
      const scheme = location.protocol === "https:" ? "wss://" : "ws://";
      const ws = new WebSocket(scheme + location.host + path + "?after=" + state.lastSeq);
      state.ws = ws;
      ws.onopen = () => { state.retry = 0; setLive("live"); document.body.dataset.live = "open"; };
      ws.onmessage = onMessage;
      ws.onclose = (event) => {
        document.body.dataset.live = "closed";
        if (state.ws !== ws) return;  // an older socket
        if (state.stopped) { setLive("paused"); return; }
        if (event.code === 4401) { state.stopped = true; setLive("live updates stopped: log in again"); return; }
        if (event.code === 4404) { state.stopped = true; setLive("this search no longer exists"); return; }
        setLive("reconnecting…");
        state.retry = Math.min(state.retry + 1, 6);
        setTimeout(connect, Math.random() * Math.min(5000, 125 * 2 ** state.retry));
      };
    }

    document.body.dataset.liveSeq = String(state.lastSeq);
    // Drop the connection and come back later: the reconnect replays what was missed.
    state.reconnect = () => { if (state.ws) state.ws.close(); };
    state.pause = () => { state.stopped = true; if (state.ws) state.ws.close(); };
    state.resume = () => { if (state.stopped) { state.stopped = false; connect(); } };
    connect();
  };
})();
