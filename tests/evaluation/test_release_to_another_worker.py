"""Two evaluators of one device (two GPUs of the same model, as `evaluators` runs them): while the
first runs a job and renews its lease the second leaves the job alone; when the first is killed
(kill -9, its sandboxes with it) the second takes the job once the lease has run out."""

import time
from datetime import datetime, timedelta

import pytest

from tests.evaluation.test_worker import job_state, queue_spinning_kernel
from tests.searches.engine_env import env_for, kill_hard, query, start, validated_db, wait_for

LEASE_SECONDS = 8


def lease_expiry(db, job_id) -> datetime:
    [(expires,)] = query(db, "select lease_expires_at from searches_evaluationjob where id=?", (job_id,))
    return datetime.fromisoformat(expires)


@pytest.mark.slow
@pytest.mark.timeout(600)
def test_the_job_of_a_killed_worker_goes_to_its_twin_after_the_lease_runs_out(tmp_path):
    db, problem_id = validated_db(tmp_path)
    *_, job_id = queue_spinning_kernel(db, problem_id)
    env = env_for(db, RUNNER_TIMEOUT="300", JOB_LEASE_SECONDS=str(LEASE_SECONDS))
    log = tmp_path / "evaluators.log"
    first = start(db, "evaluator", "--name", "host-gpu0", "--rekick-seconds", "0", "--poll", "0.2", env=env,
                  log_to=log)
    second = None
    try:
        wait_for(lambda: job_state(db, job_id)[:3] == ("leased", 1, "host-gpu0"), timeout=120,
                 what="the first worker's claim", dump=(db, log))
        second = start(db, "evaluator", "--name", "host-gpu1", "--rekick-seconds", "0", "--poll", "0.2", env=env,
                       log_to=log)
        wait_for(lambda: query(db, "select 1 from searches_worker where name='host-gpu1'"), timeout=120,
                 what="the second worker to start")
        # Longer than a lease: the live first worker renews it, so its twin never takes the job.
        time.sleep(LEASE_SECONDS * 1.5)
        assert job_state(db, job_id)[:3] == ("leased", 1, "host-gpu0")

        expired_at = lease_expiry(db, job_id)
        kill_hard(first)
        wait_for(lambda: job_state(db, job_id)[:3] == ("leased", 2, "host-gpu1"), timeout=LEASE_SECONDS * 4,
                 what="the twin's claim", dump=(db, log))
        # Its claim set a fresh lease: claimed = new expiry - one lease, never before the old lease ran out.
        claimed_at = lease_expiry(db, job_id) - timedelta(seconds=LEASE_SECONDS)
        assert claimed_at >= expired_at - timedelta(seconds=0.05), (claimed_at, expired_at)
        assert query(db, "select count(*) from searches_benchmarkrun")[0][0] == 0  # judged by neither yet
    finally:
        for process in (first, second):
            if process is not None and process.poll() is None:
                kill_hard(process)
