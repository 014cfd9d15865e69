"""Fault injection with the real processes of a Redis deployment: `manage.py qcluster` (the search
engine's task queue on Redis) and `manage.py evaluator`, on a database file, with a redis-server of
the test's own that is killed while a candidate is being judged and started again later.

The verdict lands while Redis is down, the evaluator does not exit, and once Redis is back the
search finishes by itself (the scheduled re-kick queues the step whose kick was refused), each
candidate judged once."""

import time

import pytest

from tests.live.redis_server import RedisServer
from tests.searches.engine_env import env_for, query, script, start, stop, validated_db, wait_for

pytestmark = [pytest.mark.redis, pytest.mark.slow]


def started_runs(db) -> int:
    return query(db, "select count(*) from searches_evaluationjob where purpose='search' and run_started_at is not null"
                     " and status='leased'")[0][0]


@pytest.mark.timeout(900)
def test_a_search_rides_out_a_redis_outage_during_a_verdict(tmp_path):
    redis = RedisServer(tmp_path)
    redis.start()
    db, problem_id = validated_db(tmp_path)
    env = env_for(db, REDIS_URL=redis.url, Q_WORKERS="1")
    log = tmp_path / "processes.log"
    processes = [start(db, "qcluster", env=env, log_to=log),
                 start(db, "evaluator", "--name", "outage-cpu", "--poll", "0.2", "--rekick-seconds", "5",
                       env=env, log_to=log)]
    evaluator = processes[1]
    try:
        search_id = script(db, (
            f"s = services.search_start(problem=Problem.objects.get(pk={problem_id}), user=None, proposer='playbook',"
            " device='cpu', rounds=1, parents_per_round=1, ideas_per_parent=1, kernels_per_idea=2, bank_size=0)\n"
            "print(json.dumps(s.id))\n"), env=env)
        wait_for(lambda: started_runs(db), timeout=300, what="a candidate in its sandbox", dump=(db, log))

        redis.stop()
        wait_for(lambda: query(db, "select count(*) from searches_benchmarkrun")[0][0], timeout=300,
                 what="a verdict recorded while Redis is down", dump=(db, log))
        time.sleep(5)  # its pushes and the kick after it have failed by now
        assert evaluator.poll() is None, log.read_text()[-3000:]
        assert query(db, "select status from searches_search where id=?", (search_id,)) == [("running",)]

        redis.start()  # the same port, empty: every queued task and event it held is gone
        wait_for(lambda: query(db, "select status from searches_search where id=?", (search_id,))[0][0] != "running",
                 timeout=600, what="the search to finish after Redis came back", dump=(db, log))
        assert query(db, "select status, stop_reason from searches_search") == [
            ("completed", "completed all 1 rounds")]
        assert evaluator.poll() is None
        # every candidate judged exactly once, each by its job
        runs = query(db, "select kernel_id, count(*) from searches_benchmarkrun group by kernel_id")
        assert len(runs) == 3 and all(n == 1 for _, n in runs)
        assert query(db, "select count(*) from searches_kernel where status in ('pending', 'evaluating')") == [(0,)]
    finally:
        for process in processes:
            stop(process)
        redis.stop()
