"""The evaluation worker as a real process: SIGTERM hands a running job back untouched, and a
job that kills its worker (kill -9 while it runs) three times is failed for good."""

import os
import signal
import socket
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import pytest

import playbook as book
from searches import catalog
from tests.searches.engine_env import PROBLEM_KEY, ROOT, env_for, kill_hard, manage, query, script, start, stop, validated_db, wait_for

ENTRY = "void softmax(const float* x, float* y, i64 rows, i64 cols) {"


def test_the_evaluator_process_never_loads_torch_or_cupy(tmp_path):
    code = ("import sys, django; django.setup()\n"
            "import runner, evaluation.worker, evaluation.management.commands.evaluator\n"
            "assert not {'torch', 'cupy'} & set(sys.modules), sorted(m for m in sys.modules if 'torch' in m)\n")
    done = subprocess.run([sys.executable, "-c", code], cwd=ROOT, env=env_for(tmp_path / "unused.sqlite3"),
                          capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr[-2000:]



def never_ending_kernel() -> str:
    """A correct-looking kernel whose C code spins forever: it keeps its worker busy until killed."""
    entry = catalog.get(PROBLEM_KEY)
    source = book.render(entry.source, entry.family, entry.device, book.recipes(entry.family, entry.device)[0], 0)
    assert ENTRY in source
    return source.replace(ENTRY, ENTRY + "\n    volatile int spin = 1; while (spin) {}")


def queue_spinning_kernel(db, problem_id: int) -> tuple[int, int, int]:
    """A search with one submitted kernel that never returns: the search, kernel and job ids."""
    return tuple(script(db, (
        f"p = Problem.objects.get(pk={problem_id})\n"
        "s = services.search_start(problem=p, user=None, proposer='playbook', device='cpu', rounds=1,"
        " parents_per_round=1, ideas_per_parent=1, kernels_per_idea=1)\n"
        f"k = services.kernel_submit(user=None, problem=p, search=s, source={never_ending_kernel()!r}, name='spin')\n"
        "print(json.dumps([s.id, k.id, k.jobs.get().id]))\n")))


def job_state(db, job_id):
    return query(db, "select status, attempts, lease_owner, last_error from searches_evaluationjob where id=?",
                 (job_id,))[0]


@pytest.mark.slow
@pytest.mark.timeout(600)
def test_sigterm_hands_back_and_a_job_that_kills_its_worker_three_times_fails_for_good(tmp_path):
    db, problem_id = validated_db(tmp_path)
    search_id, kernel_id, job_id = queue_spinning_kernel(db, problem_id)
    env = env_for(db, RUNNER_TIMEOUT="300")
    log = tmp_path / "evaluator.log"

    def running(attempt):
        status, attempts, owner, _ = job_state(db, job_id)
        return status == "leased" and attempts == attempt and owner == "poison-host"

    # SIGTERM while the job runs: a clean exit, the job queued again, no attempt used up.
    evaluator = start(db, "evaluator", "--name", "poison-host", "--rekick-seconds", "0", env=env, log_to=log)
    wait_for(lambda: running(1), timeout=120, what="the job to start")
    time.sleep(1.0)
    assert stop(evaluator) == 0, log.read_text()[-3000:]
    assert job_state(db, job_id)[:3] == ("queued", 0, "")

    # kill -9 while it runs, three times: every restart under the same name takes it again.
    for attempt in (1, 2, 3):
        evaluator = start(db, "evaluator", "--name", "poison-host", "--rekick-seconds", "0", env=env, log_to=log)
        wait_for(lambda: running(attempt), timeout=120, what=f"claim {attempt}")
        time.sleep(1.0)
        kill_hard(evaluator)

    manage(db, "evaluator", "--once", "--name", "poison-host", env=env, timeout=120)
    status, attempts, _, error = job_state(db, job_id)
    assert (status, attempts) == ("failed", 3)
    assert "gave up after 3 attempts" in error
    [(kernel_status, reason)] = query(db, "select status, reason from searches_kernel where id=?", (kernel_id,))
    assert kernel_status == "failed" and "gave up after 3 attempts" in reason
    assert query(db, "select count(*) from searches_benchmarkrun")[0][0] == 0
    [(last_kind, payload)] = query(db, "select kind, payload from searches_searchevent where search_id=? "
                                       "order by seq desc limit 1", (search_id,))
    assert last_kind == "kernel.updated" and '"failed"' in payload


@pytest.mark.slow
@pytest.mark.timeout(600)
def test_a_restarted_evaluator_keeps_its_name_and_takes_its_dead_predecessors_job_at_once(tmp_path):
    db, problem_id = validated_db(tmp_path)
    *_, job_id = queue_spinning_kernel(db, problem_id)
    env = env_for(db, RUNNER_TIMEOUT="300")  # the job would hold its lease for the whole JOB_LEASE_SECONDS
    log = tmp_path / "evaluator.log"
    name = f"{socket.gethostname()}-cpu"  # no --name: the default is the host and the device

    def leased(attempt):
        status, attempts, owner, _ = job_state(db, job_id)
        return status == "leased" and attempts == attempt and owner == name

    first = start(db, "evaluator", "--rekick-seconds", "0", env=env, log_to=log)
    try:
        wait_for(lambda: leased(1), timeout=120, what="the first claim", dump=(db, log))
        # A second live evaluator under the same name is refused: freeing the job would run it twice.
        twin = manage(db, "evaluator", "--rekick-seconds", "0", env=env, check=False, timeout=120)
        assert twin.returncode != 0 and f"an evaluator named {name!r} is running" in twin.stderr
        assert leased(1)
        kill_hard(first)
        killed = time.monotonic()
        second = start(db, "evaluator", "--rekick-seconds", "0", env=env, log_to=log)
        try:
            wait_for(lambda: leased(2), timeout=30, what="the restarted evaluator's claim", dump=(db, log))
            assert time.monotonic() - killed < 30
            [(pid,)] = query(db, "select pid from searches_worker where name=?", (name,))
            assert pid == second.pid
        finally:
            kill_hard(second)
    finally:
        if first.poll() is None:
            kill_hard(first)


def descendants(pid: int) -> set[int]:
    """Every live process started, directly or not, by pid (read from /proc)."""
    children: dict[int, list[int]] = {}
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            fields = stat.read_text().rsplit(")", 1)[1].split()
        except OSError:
            continue
        children.setdefault(int(fields[1]), []).append(int(stat.parent.name))
    found, todo = set(), [pid]
    while todo:
        for child in children.get(todo.pop(), []):
            found.add(child)
            todo.append(child)
    return found


def running(pid: int) -> bool:
    try:
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0] != "Z"
    except OSError:
        return False


@pytest.mark.slow
@pytest.mark.timeout(600)
def test_kill_9_of_the_evaluator_takes_its_sandboxes_and_the_next_one_removes_their_folders(tmp_path):
    db, problem_id = validated_db(tmp_path)
    *_, job_id = queue_spinning_kernel(db, problem_id)
    env = env_for(db, RUNNER_TIMEOUT="300")
    log = tmp_path / "evaluator.log"
    first = start(db, "evaluator", "--name", "kill-host", "--rekick-seconds", "0", env=env, log_to=log)
    second = None
    try:
        wait_for(lambda: job_state(db, job_id)[:2] == ("leased", 1), timeout=120, what="the claim", dump=(db, log))
        time.sleep(1.0)  # the spinning candidate is running now
        sandboxes = descendants(first.pid)
        folders = list(Path(tempfile.gettempdir()).glob(f"kernellab-sandbox-{first.pid}-*"))
        assert sandboxes and folders
        os.kill(first.pid, signal.SIGKILL)  # the evaluator alone, not its process group
        first.wait(timeout=30)
        wait_for(lambda: not any(running(pid) for pid in sandboxes), timeout=5, what="its sandboxes to die")

        second = start(db, "evaluator", "--name", "kill-host", "--rekick-seconds", "0", env=env, log_to=log)
        wait_for(lambda: job_state(db, job_id)[:2] == ("leased", 2), timeout=30, what="the restart's claim",
                 dump=(db, log))
        assert not any(folder.exists() for folder in folders)
    finally:
        for process in (first, second):
            if process is not None and process.poll() is None:
                kill_hard(process)


def test_a_negative_pool_size_is_refused_and_zero_is_a_pool_without_warm_sandboxes(tmp_path):
    db = tmp_path / "pool.sqlite3"
    manage(db, "migrate", "--noinput", "-v", "0")
    refused = manage(db, "evaluator", "--once", "--pool-size", "-1", check=False)
    assert refused.returncode != 0 and "--pool-size must be 0 (no warm sandboxes) or more" in refused.stderr
    done = manage(db, "evaluator", "--once", "--pool-size", "0", "--name", "no-warm")
    assert "serving cpu jobs with 0 warm sandbox(es)" in done.stderr
