"""Two real evaluators of one device, with a short heartbeat and the default long lease: when the
one running a job is killed (kill -9, its sandboxes with it), the other sees its heartbeat go stale
and takes the job long before the lease would have run out, and the job gets one verdict."""

import time
from datetime import datetime, timedelta

import pytest

from tests.evaluation.test_worker import job_state, queue_spinning_kernel
from tests.searches.engine_env import env_for, kill_hard, query, start, validated_db, wait_for

HEARTBEAT_SECONDS = 2  # taken for dead after three missed beats: 6 s
LEASE_SECONDS = 600
RUNNER_TIMEOUT = 30  # the spinning candidate's verdict: a timeout, after this long


def lease(db, job_id) -> tuple[str | None, datetime | None]:
    [(started, expires)] = query(db, "select run_started_at, lease_expires_at from searches_evaluationjob where id=?",
                                 (job_id,))
    return started, datetime.fromisoformat(expires) if expires else None


@pytest.mark.slow
@pytest.mark.timeout(600)
def test_a_killed_evaluators_job_goes_to_its_twin_once_its_heartbeat_is_stale(tmp_path):
    db, problem_id = validated_db(tmp_path)
    *_, job_id = queue_spinning_kernel(db, problem_id)
    env = env_for(db, RUNNER_TIMEOUT=str(RUNNER_TIMEOUT), JOB_LEASE_SECONDS=str(LEASE_SECONDS),
                  WORKER_HEARTBEAT_SECONDS=str(HEARTBEAT_SECONDS))
    log = tmp_path / "evaluators.log"
    names = ("host-gpu0", "host-gpu1")
    evaluators = {name: start(db, "evaluator", "--name", name, "--rekick-seconds", "0", "--poll", "0.2", env=env,
                              log_to=log) for name in names}
    try:
        holder = wait_for(lambda: (state := job_state(db, job_id))[0] == "leased" and lease(db, job_id)[0]
                          and state[2], timeout=180, what="a claim and the run's start", dump=(db, log))
        twin = next(name for name in names if name != holder)
        wait_for(lambda: query(db, "select 1 from searches_worker where name=?", (twin,)), timeout=180,
                 what="the twin to start", dump=(db, log))
        # Past three beats: a live holder keeps beating while its candidate runs, so it keeps its job.
        time.sleep(4 * HEARTBEAT_SECONDS)
        assert job_state(db, job_id)[:3] == ("leased", 1, holder)
        _, first_expiry = lease(db, job_id)

        kill_hard(evaluators[holder])
        wait_for(lambda: job_state(db, job_id)[:3] == ("leased", 2, twin), timeout=120,
                 what="the twin's claim", dump=(db, log))
        claimed_at = lease(db, job_id)[1] - timedelta(seconds=LEASE_SECONDS)
        assert claimed_at < first_expiry - timedelta(seconds=LEASE_SECONDS / 2)  # long before it ran out

        wait_for(lambda: job_state(db, job_id)[0] == "done", timeout=RUNNER_TIMEOUT * 6, what="the twin's verdict",
                 dump=(db, log))
        runs = query(db, "select worker, status from searches_benchmarkrun")
        assert runs == [(twin, "timeout")]
        # the killed run counted (its candidate was running), and nothing was an infrastructure failure
        assert query(db, "select attempts, infra_attempts from searches_evaluationjob where id=?",
                     (job_id,)) == [(2, 0)]
    finally:
        for process in evaluators.values():
            if process.poll() is None:
                kill_hard(process)
