"""Benchmark the lineage view: how long a 2,000-kernel search takes to draw in a real browser
(Debian chromium against a real daphne), on a scratch SQLite database in a temporary folder.

    python manage.py bench_lineage [--kernels 2000] [--loads 10]

Reported per page load: the time from navigation start until the first frame with the picture
has been painted (HTML, JSON, layout, SVG, paint), the script's own layout-and-draw time, and
the page's server time. The parent holds no database; a child builds the data.
"""

import json
import os
import secrets
import shutil
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

from django.conf import settings
from django.core.management.base import BaseCommand, CommandError

from benches.harness import free_port, make_search, stop, wait_for

ROOT = Path(settings.BASE_DIR)


class Command(BaseCommand):
    help = "Lineage view draw time with 2,000 kernels in Debian chromium (scratch database)."

    def add_arguments(self, parser):
        parser.add_argument("--kernels", type=int, default=2000)
        parser.add_argument("--loads", type=int, default=10, help="page loads timed (after one warm-up)")
        parser.add_argument("--phase", choices=["main", "build"], default="main", help="internal: build the data")

    def handle(self, *args, phase, kernels, loads, **_):
        if phase == "build":
            return self.build(kernels)
        from tests.conftest import chromium_path

        browser = chromium_path()
        if not browser:
            raise CommandError("Chromium is needed: apt-get install chromium")
        scratch = Path(tempfile.mkdtemp(prefix="kernellab-bench-lineage-"))
        env = {k: v for k, v in os.environ.items() if k not in {"DATABASE_URL", "REDIS_URL", "LIVE_UPDATES"}}
        env.update({"KERNELLAB_DATA_DIR": str(scratch), "SQLITE_PATH": str(scratch / "bench.sqlite3"),
                    "PYTHONUNBUFFERED": "1", "LOG_LEVEL": "WARNING", "DEBUG": "0"})
        try:
            done = subprocess.run([sys.executable, "manage.py", "bench_lineage", "--phase", "build",
                                   "--kernels", str(kernels)], cwd=ROOT, env=env, capture_output=True, text=True,
                                  timeout=900)
            if done.returncode != 0:
                raise CommandError(f"building the data failed:\n{done.stdout}\n{done.stderr}")
            built = json.loads(done.stdout.strip().splitlines()[-1])
            drawn, script, server = self.measure(env, built, loads, browser)
        finally:
            shutil.rmtree(scratch, ignore_errors=True)
        rows = [
            (f"lineage view, navigation to painted picture ({built['kernels']} kernels, n={loads})",
             f"p50 {statistics.median(drawn):.0f} ms", f"max {max(drawn):.0f} ms (target < 1000 ms)"),
            ("  of which layout and SVG build in the script", f"p50 {statistics.median(script):.0f} ms",
             f"max {max(script):.0f} ms"),
            ("  of which the page's server time (time to first byte)", f"p50 {statistics.median(server):.0f} ms",
             f"max {max(server):.0f} ms"),
            (f"load average during the run (this machine has {os.cpu_count()} cores)", f"{os.getloadavg()[0]:.1f}", ""),
        ]
        width = max(len(r[0]) for r in rows)
        self.stdout.write(f"{'measure'.ljust(width)}  {'median':>12}  tail")
        for label, a, b in rows:
            self.stdout.write(f"{label.ljust(width)}  {a:>12}  {b}")

    def measure(self, env, built, loads, browser):
        from playwright.sync_api import sync_playwright

        port = free_port()
        log = tempfile.TemporaryFile()
        web = subprocess.Popen([sys.executable, "-m", "daphne", "-b", "127.0.0.1", "-p", str(port),
                                "kernellab.asgi:application"], cwd=ROOT, env=env, stdout=log, stderr=subprocess.STDOUT,
                               start_new_session=True)
        drawn, script, server = [], [], []
        try:
            wait_for(f"http://127.0.0.1:{port}/login/", web, log)
            with sync_playwright() as pw:
                chromium = pw.chromium.launch(executable_path=browser, headless=True, args=["--no-sandbox"])
                context = chromium.new_context(base_url=f"http://127.0.0.1:{port}",
                                               viewport={"width": 1400, "height": 900})
                context.add_cookies([{"name": settings.SESSION_COOKIE_NAME, "value": built["session"],
                                      "url": f"http://127.0.0.1:{port}"}])
                page = context.new_page()
                for n in range(loads + 1):  # the first load warms caches and is not counted
                    page.goto(f"/searches/{built['search_code']}/lineage/")
                    page.wait_for_function("() => document.body.dataset.lineageDrawnMs", timeout=60_000)
                    nodes = page.locator("#lineage-svg .kn").count()
                    if nodes != built["kernels"]:
                        raise CommandError(f"the view drew {nodes} of {built['kernels']} kernels")
                    timing = page.evaluate("""() => ({drawn: +document.body.dataset.lineageDrawnMs,
                        script: window.kernelLabLineage.firstRenderMs,
                        ttfb: performance.getEntriesByType('navigation')[0].responseStart})""")
                    if n:
                        drawn.append(timing["drawn"])
                        script.append(timing["script"])
                        server.append(timing["ttfb"])
                chromium.close()
        finally:
            stop(web)
        return drawn, script, server

    def build(self, kernels: int):
        from django.contrib.auth import get_user_model
        from django.core.management import call_command
        from django.test import Client

        call_command("migrate", verbosity=0)
        user = get_user_model().objects.create_user("bench", password=secrets.token_urlsafe(16))
        search = make_search(user, kernels)
        client = Client()
        client.force_login(user)
        self.stdout.write(json.dumps({"search_code": str(search.code), "session": client.cookies["sessionid"].value,
                                      "kernels": search.kernels.count()}))
