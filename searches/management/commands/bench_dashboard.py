"""Benchmark the dashboard: search page server time with 2,000 kernels, and the latency of a
live event from a worker process to a real browser (Debian chromium), embedded (SQLite +
poller) and, when REDIS_URL is set, Redis.

Everything runs against a scratch SQLite database in a temporary folder; nothing touches the
configured database. The parent process holds no database: it starts children with the
scratch environment (build, daphne, the writing "worker") and drives chromium.

    python manage.py bench_dashboard [--kernels 2000] [--events 60]
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
from pathlib import Path

from django.conf import settings
from django.core.management.base import BaseCommand, CommandError

from ..benchmarks import free_port, make_search, wait_for

ROOT = Path(settings.BASE_DIR)


class Command(BaseCommand):
    help = "Search page server time with 2,000 kernels and worker-to-browser event latency (scratch database)."

    def add_arguments(self, parser):
        parser.add_argument("--kernels", type=int, default=2000)
        parser.add_argument("--events", type=int, default=60, help="live events timed per setup")
        parser.add_argument("--requests", type=int, default=10, help="search page loads timed")
        parser.add_argument("--phase", choices=["main", "build", "write"], default="main", help=("internal: "
                            "build the scratch data, or write events as a worker"))
        parser.add_argument("--search", type=int, help="internal: the search to write events to")
        parser.add_argument("--gap", type=float, default=0.1, help="seconds between written events")

    def handle(self, *args, phase, **options):
        if phase == "build":
            return self.build(options["kernels"], options["requests"])
        if phase == "write":
            return self.write(options["search"], options["events"], options["gap"])
        return self.main(**options)

    # --- the parent -----------------------------------------------------------------------
    def main(self, *, kernels, events, requests, **_):
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
            rows = [(f"search page server time ({built['kernels']} kernels, {built['ideas']} ideas, n={len(times)})",
                     f"p50 {statistics.median(times):.0f} ms", f"max {max(times):.0f} ms (target < 300 ms)"),
                    (f"  of which CPU time in the server process ({built['bytes'] // 1024} KiB of HTML)",
                     f"p50 {statistics.median(cpu):.0f} ms", f"max {max(cpu):.0f} ms")]
            setups = [("embedded (SQLite + poller)", {})]
            if os.environ.get("REDIS_URL"):
                setups.append(("Redis (channels_redis)", {"REDIS_URL": os.environ["REDIS_URL"]}))
            browser = chromium_path()
            if not browser:
                raise CommandError("Chromium is needed for the latency part: apt-get install chromium")
            for name, extra in setups:
                latencies = self.latency({**env, **extra}, built, events, browser)
                latencies.sort()
                p95 = latencies[max(0, int(round(0.95 * len(latencies))) - 1)]
                rows.append((f"event latency worker -> browser, {name}, n={len(latencies)}",
                             f"p50 {statistics.median(latencies):.0f} ms", f"p95 {p95:.0f} ms (target < 1000 ms)"))
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

    def latency(self, env, built, events, browser) -> list[float]:
        from playwright.sync_api import sync_playwright

        port = free_port()
        log = tempfile.TemporaryFile()
        web = subprocess.Popen([sys.executable, "-m", "daphne", "-b", "127.0.0.1", "-p", str(port),
                                "kernellab.asgi:application"], cwd=ROOT, env=env, stdout=log, stderr=subprocess.STDOUT,
                               start_new_session=True)
        try:
            wait_for(f"http://127.0.0.1:{port}/login/", web, log)
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
        finally:
            web.terminate()
            try:
                web.wait(timeout=10)
            except subprocess.TimeoutExpired:
                web.kill()
        latencies = []
        for at_ms, data in arrivals:
            message = json.loads(data)
            if message.get("kind") == "bench.ping":
                latencies.append(at_ms - message["payload"]["t"] * 1000)
        return latencies

    # --- children (scratch environment) --------------------------------------------------------
    def build(self, kernels: int, requests: int):
        from django.contrib.auth import get_user_model
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
        page_ms, cpu_ms = [], []
        for _ in range(requests):
            started, started_cpu = time.perf_counter(), time.process_time()
            response = client.get(url)
            page_ms.append((time.perf_counter() - started) * 1000)
            cpu_ms.append((time.process_time() - started_cpu) * 1000)
            assert response.status_code == 200
        self.stdout.write(json.dumps({
            "search_id": search.id, "search_code": str(search.code), "session": client.cookies["sessionid"].value,
            "kernels": search.kernels.count(), "ideas": search.ideas.count(), "page_ms": page_ms,
            "cpu_ms": cpu_ms, "bytes": len(response.content)}))

    def write(self, search_id: int, count: int, gap: float):
        """As the evaluation worker would: one transaction per event, then the next."""
        from django.db import transaction

        from live import events

        for _ in range(count):
            time.sleep(gap)
            with transaction.atomic():
                events.publish(search_id, "bench.ping", {"t": time.time()})
