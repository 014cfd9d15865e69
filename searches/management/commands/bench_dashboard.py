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
import random
import secrets
import shutil
import socket
import statistics
import subprocess
import sys
import tempfile
import time
import urllib.request
from pathlib import Path

from django.conf import settings
from django.core.management.base import BaseCommand, CommandError

ROOT = Path(settings.BASE_DIR)
STATUSES = ["correct"] * 10 + ["incorrect"] * 3 + ["compile_error"] * 2 + ["rejected", "timeout", "crashed",
                                                                          "runtime_error"]


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

        port = _free_port()
        log = tempfile.TemporaryFile()
        web = subprocess.Popen([sys.executable, "-m", "daphne", "-b", "127.0.0.1", "-p", str(port),
                                "kernellab.asgi:application"], cwd=ROOT, env=env, stdout=log, stderr=subprocess.STDOUT,
                               start_new_session=True)
        try:
            _wait_for(f"http://127.0.0.1:{port}/login/", web, log)
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
        search = _make_search(user, kernels)
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


def _make_search(user, kernels: int):
    """A finished-looking search: rounds of ideas, each implemented a few times."""
    from django.utils import timezone

    from searches.models import Idea, Kernel, Problem, Search

    rng = random.Random(7)
    # Byte counts and a GPU with known ceilings: every correct node shows its speed of light.
    problem = Problem.objects.create(name="Softmax (bench)", source="# bench\n", validation_status="ok",
                                     validation={"outputs": [{"shape": [4096, 65536], "dtype": "float32"}]},
                                     flops=0, min_bytes=2 * 4096 * 65536 * 4)
    search = Search.objects.create(problem=problem, created_by=user, status="completed", rounds=5,
                                   parents_per_round=4, ideas_per_parent=5, kernels_per_idea=4,
                                   candidates_evaluated=kernels, started_at=timezone.now())
    source = "import torch\nclass ModelNew(torch.nn.Module):\n    pass\n"
    seed = Kernel.objects.create(problem=problem, search=search, round=0, origin="seed", status="correct",
                                 median_ms=1.0, speedup_vs_eager=1.0, speedup_vs_compile=0.8, source=source,
                                 device_name="NVIDIA H200", precision="fp32")
    parents, made = [seed], 1
    for round_number in range(1, 6):
        per_round = (kernels - 1) // 5 + (1 if round_number <= (kernels - 1) % 5 else 0)
        ideas = Idea.objects.bulk_create([
            Idea(search=search, parent_kernel=rng.choice(parents), round=round_number, title=f"idea {round_number}.{i}",
                 description="bench") for i in range(max(1, per_round // 4))])
        batch = []
        for i in range(per_round):
            idea = ideas[i % len(ideas)]
            status = rng.choice(STATUSES)
            ms = rng.uniform(0.2, 1.2) if status == "correct" else None
            batch.append(Kernel(problem=problem, search=search, idea=idea, parent_id=idea.parent_kernel_id,
                                round=round_number, status=status, median_ms=ms, source=source,
                                speedup_vs_eager=(1 / ms) if ms else None, speedup_vs_compile=(0.8 / ms) if ms else None,
                                quarantined=rng.random() < 0.01, device_name="NVIDIA H200" if ms else "",
                                precision="fp32" if ms else ""))
        created = Kernel.objects.bulk_create(batch)
        made += len(created)
        parents = sorted([k for k in created if k.median_ms], key=lambda k: k.median_ms)[:4] or parents
    return search


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def _wait_for(url, process, log, timeout=60):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if process.poll() is not None:
            log.seek(0)
            raise CommandError(f"daphne exited:\n{log.read().decode(errors='replace')[-3000:]}")
        try:
            with urllib.request.urlopen(url, timeout=2):
                return
        except OSError:
            time.sleep(0.3)
    raise CommandError("daphne did not answer in time")
