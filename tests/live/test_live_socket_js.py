"""static/js/live_socket.js's reconnect wait, run under node with a stand-in browser: full jitter
(a random wait in [0, back-off]) so a crowd of tabs does not return in lockstep, capped at 5 s."""

import json
import shutil
import subprocess
from pathlib import Path

import pytest

from tests.conftest import service_missing

SCRIPT = Path(__file__).resolve().parents[2] / "static" / "js" / "live_socket.js"

# Each "tab" loads the script, and its socket closes on every attempt; the waits it asks for are recorded.
HARNESS = """
const fs = require("fs");
const source = fs.readFileSync(process.argv[1], "utf8");
const tabs = [];
for (let tab = 0; tab < 20; tab++) {
  const waits = [];
  let pending = null;
  const sockets = [];
  const window = {};
  const document = { body: { dataset: {} }, getElementById: () => null };
  const location = { protocol: "http:", host: "h" };
  function WebSocket() { sockets.push(this); }
  const setTimeout = (fn, ms) => { waits.push(ms); pending = fn; };
  new Function("window", "document", "location", "WebSocket", "setTimeout", source)(
    window, document, location, WebSocket, setTimeout);
  const state = { lastSeq: 0 };
  window.kernelLabFollowSearch("/ws/searches/x/", state, () => {});
  for (let i = 0; i < 10; i++) {
    sockets[sockets.length - 1].onclose({ code: 1006 });
    const next = pending; pending = null; next();
  }
  tabs.push(waits);
}
console.log(JSON.stringify(tabs));
"""


@pytest.fixture
def node():
    path = shutil.which("node")
    if path is None:
        service_missing("node", "install nodejs to run the live script's unit tests")
    return path


def test_reconnects_wait_a_random_share_of_a_capped_back_off(node):
    out = subprocess.run([node, "-e", HARNESS, str(SCRIPT)], capture_output=True, text=True, timeout=60, check=True)
    tabs = json.loads(out.stdout)
    backoff = [min(5000, 250 * 2 ** i) for i in range(10)]  # 0.25 s doubling, capped at 5 s
    for waits in tabs:
        assert len(waits) == 10
        assert all(0 <= wait <= limit for wait, limit in zip(waits, backoff)), waits
    firsts = [waits[0] for waits in tabs]
    assert len(set(firsts)) == len(firsts)  # twenty tabs, twenty different first waits: no lockstep
    late = [wait for waits in tabs for wait in waits[5:]]
    assert max(late) > 2500  # the cap is the whole back-off, not a fixed share of it
