"""Benchmark the dashboard: search page server time with 2,000 kernels, and the latency of a
live event from a worker process to a real browser (Debian chromium), embedded (SQLite +
poller) and, when REDIS_URL is set, Redis.

Everything runs against a scratch SQLite database in a temporary folder; nothing touches the
configured database. The parent process holds no database: it starts children with the
scratch environment (build, daphne, the writing "worker") and drives chromium.

    python manage.py bench_dashboard [--kernels 2000] [--events 60] [--viewers 50 100 200] [--page-loads 50]

`--viewers` adds, per setup and per count, that many websocket viewers of the search (one load
generator process, benches/crowd.py) and the latency of each event to each of them;
`--page-loads` that many concurrent loads of the whole 2,000-kernel page from another process.
"""

import json
import os
import secrets
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from contextlib import contextmanager
from pathlib import Path

from django.conf import settings
from django.core.management.base import BaseCommand, CommandError

from benches.harness import free_port, make_search, stop, wait_for

ROOT = Path(settings.BASE_DIR)


class Command(BaseCommand):
    help = "Search page server time with 2,000 kernels and worker-to-browser event latency (scratch database)."

    def add_arguments(self, parser):
        parser.add_argument("--kernels", type=int, default=2000)
        parser.add_argument("--events", type=int, default=60, help="live events timed per setup")
        parser.add_argument("--requests", type=int, default=10, help="search page loads timed")
        parser.add_argument("--viewers", type=int, nargs="*", default=[], help="websocket viewer counts to time")
        parser.add_argument("--page-loads", type=int, default=0, help="concurrent loads of the search page to time")
        parser.add_argument("--phase", choices=["main", "build", "write", "viewers", "loads"], default="main",
                            help="internal: build the scratch data, write events as a worker, or be the crowd")
        parser.add_argument("--url", help="internal: what the crowd opens")
        parser.add_argument("--cookie", help="internal: the crowd's session cookie")
        parser.add_argument("--search", type=int, help="internal: the search to write events to")
        parser.add_argument("--gap", type=float, default=0.1, help="seconds between written events")

    def handle(self, *args, phase, **options):
        if phase == "build":
            return self.build(options["kernels"], options["requests"])
        if phase == "write":
            return self.write(options["search"], options["events"], options["gap"])
        if phase in ("viewers", "loads"):
            from benches import crowd

            count = options["viewers"][0] if phase == "viewers" else options["page_loads"]
            if phase == "viewers":  # as a browser does: from the seq its page was rendered with, not from 0
                from live import events

                after = events.last_seq(events.SEARCH, options["search"])
                options["url"] += f"?after={after}"
            result = (crowd.viewers(options["url"], options["cookie"], count, options["events"]) if phase == "viewers"
                      else crowd.page_loads(options["url"], options["cookie"], count))
            self.stdout.write(json.dumps(result))
            return None
        return self.main(**options)

    # --- the parent -----------------------------------------------------------------------
    def main(self, *, kernels, events, requests, viewers, page_loads, **_):
        from tests.conftest import chromium_path

        scratch = Path(tempfile.mkdtemp(prefix="kernellab-bench-"))
        env = {k: v for k, v in os.environ.items() if k not in {"DATABASE_URL", "REDIS_URL", "LIVE_UPDATES"}}
        env.update({"KERNELLAB_DATA_DIR": str(scratch), "SQLITE_PATH": str(scratch / "bench.sqlite3"),
                    "PYTHONUNBUFFERED": "1", "LOG_LEVEL": "WARNING",
                    "DEBUG": "0"})  # as deployed: DEBUG would also record every SQL query
        rows = [("search page, 2,000-kernel tree", "", "")]
        try:
            built = json.loads(self.child(env, "--phase", "build", "--kernels", str(kernels),
                                          "--requests", str(requests)).strip().splitlines()[-1])
            times, cpu = built["page_ms"], built["cpu_ms"]
            rows = [(f"search page server time ({built['kernels']} kernels, {built['ideas']} ideas, n={len(times)}), "
                     "first load after a change",
                     f"p50 {statistics.median(times):.0f} ms", f"max {max(times):.0f} ms (target < 300 ms)"),
                    (f"  of which CPU time in the server process ({built['bytes'] // 1024} KiB of HTML)",
                     f"p50 {statistics.median(cpu):.0f} ms", f"max {max(cpu):.0f} ms"),
                    ("  a later load, the tree from the cache (until the next event)",
                     f"p50 {statistics.median(built['cached_ms']):.0f} ms", f"max {max(built['cached_ms']):.0f} ms")]
            setups = [("embedded (SQLite + poller)", {})]
            if os.environ.get("REDIS_URL"):
                setups.append(("Redis (channels_redis)", {"REDIS_URL": os.environ["REDIS_URL"]}))
            browser = chromium_path()
            if not browser and not (viewers or page_loads):
                raise CommandError("Chromium is needed for the latency part: apt-get install chromium")
            for name, extra in setups:
                if not browser:
                    rows.append((f"event latency worker -> browser, {name}", "skipped", "no chromium"))
                else:
                    latencies = sorted(self.latency({**env, **extra}, built, events, browser))
                    rows.append((f"event latency worker -> browser, {name}, n={len(latencies)}",
                                 f"p50 {statistics.median(latencies):.0f} ms",
                                 f"p95 {_p95(latencies):.0f} ms (target < 1000 ms)"))
                if viewers or (page_loads and not extra):
                    rows += self.crowd({**env, **extra}, built, events, name, viewers, page_loads if not extra else 0)
        finally:
            shutil.rmtree(scratch, ignore_errors=True)
        rows.append((f"load average during the run (this machine has {os.cpu_count()} cores)",
                     f"{os.getloadavg()[0]:.1f}", ""))
        width = max(len(r[0]) for r in rows)
        self.stdout.write(f"{'measure'.ljust(width)}  {'median':>12}  tail")
        for label, a, b in rows:
            self.stdout.write(f"{label.ljust(width)}  {a:>12}  {b}")

    def child(self, env, *args) -> str:
        done = subprocess.run([sys.executable, "manage.py", "bench_dashboard", *args], cwd=ROOT, env=env,
                              capture_output=True, text=True, timeout=900)
        if done.returncode != 0:
            raise CommandError(f"bench_dashboard {' '.join(args)} failed:\n{done.stdout}\n{done.stderr}")
        return done.stdout

    @contextmanager
    def serve(self, env):
        """One daphne process, as `scripts/start` runs it; yields its port."""
        port = free_port()
        log = tempfile.TemporaryFile()
        web = subprocess.Popen([sys.executable, "-m", "daphne", "-b", "127.0.0.1", "-p", str(port),
                                "kernellab.asgi:application"], cwd=ROOT, env=env, stdout=log, stderr=subprocess.STDOUT,
                               start_new_session=True)
        try:
            wait_for(f"http://127.0.0.1:{port}/login/", web, log)
            yield port
        finally:
            stop(web)

    def crowd(self, env, built, events, name, viewers, page_loads) -> list[tuple]:
        """Each viewer count against a fresh daphne, then concurrent page loads; one row each."""
        cookie = f"{settings.SESSION_COOKIE_NAME}={built['session']}"
        rows = []
        for count in viewers:
            with self.serve(env) as port:
                crowd = subprocess.Popen(
                    [sys.executable, "manage.py", "bench_dashboard", "--phase", "viewers", "--viewers", str(count),
                     "--events", str(events), "--cookie", cookie, "--search", str(built["search_id"]),
                     "--url", f"http://127.0.0.1:{port}/ws/searches/{built['search_code']}/"],
                    cwd=ROOT, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
                ready = json.loads(crowd.stdout.readline() or "{}")
                self.child(env, "--phase", "write", "--search", str(built["search_id"]), "--events", str(events))
                out, err = crowd.communicate(timeout=600)
                if crowd.returncode != 0:
                    raise CommandError(f"the viewers' process failed:\n{err[-3000:]}")
                result = _last_json(out + err, "viewers")
            ms = sorted(1000 * t for t in result["latencies_s"]) or [float("nan")]
            rows.append((f"event latency, {name}, {count} viewers ({result['connected']} connected in "
                         f"{ready.get('connect_s', 0):.1f} s, {result['unfinished']} short), n={len(ms)}",
                         f"p50 {statistics.median(ms):.0f} ms", f"p95 {_p95(ms):.0f} ms (target < 1000 ms)"))
        if page_loads:
            with self.serve(env) as port:
                out = self.child(env, "--phase", "loads", "--page-loads", str(page_loads), "--cookie", cookie,
                                 "--url", f"http://127.0.0.1:{port}/searches/{built['search_code']}/")
            result = _last_json(out, "loads")
            seconds = sorted(1000 * t for t in result["seconds"]) or [float("nan")]
            rows.append((f"{page_loads} concurrent loads of the whole search page, {name} ({result['failed']} failed, "
                         f"{result['bytes'] // 1024} KiB gzipped)", f"p50 {statistics.median(seconds):.0f} ms",
                         f"p95 {_p95(seconds):.0f} ms, max {seconds[-1]:.0f} ms (target p95 < 1000 ms)"))
        return rows

    def latency(self, env, built, events, browser) -> list[float]:
        from playwright.sync_api import sync_playwright

        with self.serve(env) as port:
            with sync_playwright() as pw:
                chromium = pw.chromium.launch(executable_path=browser, headless=True, args=["--no-sandbox"])
                context = chromium.new_context(base_url=f"http://127.0.0.1:{port}")
                context.add_cookies([{"name": settings.SESSION_COOKIE_NAME, "value": built["session"],
                                      "url": f"http://127.0.0.1:{port}"}])
                page = context.new_page()
                # Record when each websocket message reaches the page (outside the app's own script).
                page.add_init_script("""(() => { const Native = window.WebSocket; window.__arrivals = [];
                  window.WebSocket = function (url, protocols) { const ws = new Native(url, protocols);
                    ws.addEventListener('message', (e) => window.__arrivals.push([Date.now(), e.data])); return ws; };
                  window.WebSocket.prototype = Native.prototype; })();""")
                page.goto(f"/searches/{built['search_code']}/")
                page.wait_for_function("() => document.body.dataset.live === 'open'", timeout=30_000)
                self.child(env, "--phase", "write", "--search", str(built["search_id"]), "--events", str(events))
                page.wait_for_function(f"() => window.__arrivals.length >= {events}", timeout=30_000)
                arrivals = page.evaluate("window.__arrivals")
                chromium.close()
        latencies = []
        for at_ms, data in arrivals:
            message = json.loads(data)
            if message.get("kind") == "bench.ping":
                latencies.append(at_ms - message["payload"]["t"] * 1000)
        return latencies

    # --- children (scratch environment) --------------------------------------------------------
    def build(self, kernels: int, requests: int):
        from django.contrib.auth import get_user_model
        from django.core.cache import cache
        from django.core.management import call_command
        from django.test import Client
        from django.urls import reverse

        call_command("migrate", verbosity=0)
        user = get_user_model().objects.create_user("bench", password=secrets.token_urlsafe(16))
        search = make_search(user, kernels)
        client = Client()
        client.force_login(user)
        url = reverse("search_detail", kwargs={"code": search.code})
        client.get(url)  # warm up: template loading, first queries
        page_ms, cpu_ms, cached_ms = [], [], []
        for _ in range(requests):
            cache.clear()  # the first load after a change renders the tree
            started, started_cpu = time.perf_counter(), time.process_time()
            response = client.get(url)
            page_ms.append((time.perf_counter() - started) * 1000)
            cpu_ms.append((time.process_time() - started_cpu) * 1000)
            assert response.status_code == 200
            started = time.perf_counter()
            assert client.get(url).status_code == 200  # every later one, until the next event, does not
            cached_ms.append((time.perf_counter() - started) * 1000)
        self.stdout.write(json.dumps({
            "search_id": search.id, "search_code": str(search.code), "session": client.cookies["sessionid"].value,
            "kernels": search.kernels.count(), "ideas": search.ideas.count(), "page_ms": page_ms,
            "cpu_ms": cpu_ms, "cached_ms": cached_ms, "bytes": len(response.content)}))

    def write(self, search_id: int, count: int, gap: float):
        """As the evaluation worker would: one transaction per event, then the next."""
        from django.db import transaction

        from live import events

        for _ in range(count):
            time.sleep(gap)
            with transaction.atomic():
                events.publish(search_id, "bench.ping", {"t": time.time()})


def _p95(values: list[float]) -> float:
    return values[max(0, int(round(0.95 * len(values))) - 1)]


def _last_json(out: str, key: str) -> dict:
    """The crowd child's result: its last line that is a JSON object with `key`."""
    for line in reversed(out.splitlines()):
        try:
            result = json.loads(line)
        except ValueError:
            continue
        if isinstance(result, dict) and key in result:
            return result
    raise CommandError(f"the crowd's process printed no result:\n{out[-2000:]}")
