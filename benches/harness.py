"""What the dashboard benchmarks share: a seeded finished-looking search and a daphne to wait for."""

import random
import socket
import subprocess
import time
import urllib.request

from django.core.management.base import CommandError

STATUSES = ["correct"] * 10 + ["incorrect"] * 3 + ["compile_error"] * 2 + ["rejected", "timeout", "crashed",
                                                                          "runtime_error"]


def make_search(user, kernels: int):
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


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def wait_for(url, process, log, timeout=60):
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


def stop(process, grace: float = 10) -> None:
    """Terminate a server the benchmark started; kill it if it does not stop within `grace` seconds."""
    process.terminate()
    try:
        process.wait(timeout=grace)
    except subprocess.TimeoutExpired:
        process.kill()


def bench_worker(command: str, suffix: str, device: str, pool_size: int | None, jobs_in_flight: int | None):
    """The evaluator child a benchmark command judges with, named apart from the host's own worker."""
    from django.conf import settings

    from evaluation.worker import NameInUse, check_name_free, default_name
    from searches.foreground import EvaluatorChild

    pool_size = settings.RUNNER_POOL_SIZE if pool_size is None else pool_size
    jobs_in_flight = jobs_in_flight or settings.RUNNER_JOBS_IN_FLIGHT
    worker = EvaluatorChild(name=f"{default_name(device)}-{suffix}", device=device, pool_size=pool_size,
                            jobs_in_flight=jobs_in_flight)
    try:
        check_name_free(worker.name)
    except NameInUse as error:
        raise CommandError(f"{error} (another {command} on this host and device)") from None
    return worker


def rerun_on_database(command: str, arguments: list[str], device: str, database: str) -> int:
    """Run `manage.py COMMAND --here ARGUMENTS` in a child on `database` (migrated), or on a temporary
    SQLite file: settings, the database among them, are read once, at start-up."""
    import os
    import subprocess
    import sys
    import tempfile

    from django.conf import settings

    manage = [sys.executable, str(settings.BASE_DIR / "manage.py")]
    env = dict(os.environ, RUNNER_DEVICE=device)

    def run(url: str) -> int:
        env["DATABASE_URL"] = url
        subprocess.run([*manage, "migrate", "--noinput", "-v", "0"], env=env, check=True)
        return subprocess.run([*manage, command, "--here", *arguments], env=env).returncode

    if database:
        return run(database)
    with tempfile.TemporaryDirectory(prefix=f"kernellab-{command}-") as folder:
        return run(f"sqlite:///{folder}/{command}.sqlite3")
