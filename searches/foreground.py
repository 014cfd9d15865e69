"""A search run in the foreground of one process, as `manage.py search` and `manage.py bench_evaluator`
do: the engine's steps in a thread of this process (instead of the task queue), woken by the
search's own kicks, and an evaluation worker as a child `manage.py evaluator`, started without
ANTHROPIC_API_KEY (the key stays with the engine; the process that starts sandboxes never holds it).
"""

import ctypes
import os
import signal
import subprocess
import sys
import threading
import time

from django.conf import settings
from django.core.management.base import CommandError
from django.db import close_old_connections

from evaluation.models import EvaluationJob
from searches import catalog, selectors, services
from searches.engine import kick, loop, records
from searches.models import Problem, Search


def die_with_parent() -> None:
    """In the child, before exec: SIGTERM when this command dies, even by kill -9 (Linux)."""
    try:
        ctypes.CDLL(None, use_errno=True).prctl(1, signal.SIGTERM)  # PR_SET_PDEATHSIG
    except (OSError, AttributeError):
        pass


class EvaluatorChild:
    """`manage.py evaluator` as a child process, without the secrets of this one's environment."""

    SECRETS = ("ANTHROPIC_API_KEY",)

    def __init__(self, *, name: str, device: str, pool_size: int, jobs_in_flight: int | None = None):
        self.name, self.device, self.pool_size, self.jobs_in_flight = name, device, pool_size, jobs_in_flight
        self.process: subprocess.Popen | None = None

    def argv(self) -> list[str]:
        argv = [sys.executable, str(settings.BASE_DIR / "manage.py"), "evaluator", "--name", self.name, "--device",
                self.device, "--pool-size", str(self.pool_size), "--rekick-seconds", "0", "--poll", "0.2"]
        if self.jobs_in_flight is not None:
            argv += ["--jobs-in-flight", str(self.jobs_in_flight)]
        return argv

    def __enter__(self):
        env = {k: v for k, v in os.environ.items() if k not in self.SECRETS}
        self.process = subprocess.Popen(self.argv(), env=env, stdout=subprocess.DEVNULL, preexec_fn=die_with_parent)
        return self

    def check(self) -> None:
        if self.process.poll() is not None:
            raise CommandError(f"the evaluator ({self.name}) stopped with status {self.process.returncode}")

    def wait(self, done) -> None:
        """Until done() is true; KeyboardInterrupt on Ctrl-C or SIGTERM."""
        while not done():
            self.check()
            time.sleep(0.3)

    def __exit__(self, *exc):
        if self.process.poll() is None:
            self.process.send_signal(signal.SIGTERM)  # it hands a running job back to the queue
            try:
                self.process.wait(timeout=60)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait()


class Engines:
    """While open, the engine's steps for each search started here run in a thread of this process,
    each woken by its own search's kicks (a search not started yet gets its first advance when its
    thread starts; kicks for searches not started here wake nothing)."""

    def __init__(self):
        self.events: dict[int, threading.Event] = {}
        self.threads: dict[int, threading.Thread] = {}

    def _kick(self, search_id: int) -> None:
        event = self.events.get(search_id)
        if event is not None:
            event.set()

    def __enter__(self):
        kick.set_kicker(self._kick)
        return self

    def start(self, search_id: int) -> None:
        event = self.events[search_id] = threading.Event()
        event.set()
        thread = self.threads[search_id] = threading.Thread(target=orchestrate, args=(search_id, event), daemon=True)
        thread.start()

    def died(self) -> bool:
        """A thread ended while its search is still active: nothing would advance it. (A thread ends on
        its own once its search finishes; the verified reruns queued then are still to judge.)"""
        ended = [search_id for search_id, thread in self.threads.items() if not thread.is_alive()]
        return Search.objects.filter(pk__in=ended, status__in=Search.ACTIVE).exists()

    def __exit__(self, *exc):
        try:
            for event in self.events.values():
                event.set()
            for thread in self.threads.values():
                thread.join(timeout=30)
        finally:
            kick.set_kicker(None)


def orchestrate(search_id: int, wake: threading.Event) -> None:
    """The engine's steps, as the task queue would run them, driven by local kicks. An error that
    escapes the engine (taking or giving back its lease) ends the search as failed."""
    try:
        while True:
            wake.wait(timeout=2.0)
            wake.clear()
            search = Search.objects.only("status").get(pk=search_id)
            if search.status not in Search.ACTIVE:
                return
            loop.advance(search_id)
    except Exception as exc:
        records.fail_search(search_id, f"the search engine stopped on an error: {type(exc).__name__}: {exc}")
    finally:
        close_old_connections()


def problem_for(reference: str, say) -> Problem:
    """A problem by id, code or catalog key; a catalog problem not yet in the database is loaded."""
    problem = selectors.problem_by_reference(reference)
    if problem is not None:
        return problem
    try:
        entry = catalog.get(reference)
    except KeyError:
        keys = ", ".join(p.key for p in catalog.problems())
        raise CommandError(f"No problem {reference!r}: give a problem id, code, or a catalog key ({keys}).") from None
    say(f"Loading catalog problem {entry.key}")
    return services.problem_create(user=None, name=entry.name, source=entry.source, description=entry.description,
                                   atol=entry.atol, rtol=entry.rtol, device=entry.device, catalog_key=entry.key,
                                   family=entry.family)


def queue_validation(problem: Problem) -> None:
    """A validation job for a problem waiting for one, unless one is queued or running already."""
    if problem.validation_status in (Problem.Validation.PENDING, Problem.Validation.RUNNING) and \
            not problem.jobs.filter(purpose=EvaluationJob.Purpose.VALIDATE, status__in=EvaluationJob.UNFINISHED).exists():
        services.problem_request_validation(problem=problem, user=None)


def validated(problem: Problem, worker: EvaluatorChild, say) -> Problem:
    """The problem once its validation job (queued here if none is) has run on the worker."""
    waiting = (Problem.Validation.PENDING, Problem.Validation.RUNNING)
    if problem.validation_status in waiting:
        queue_validation(problem)
        if problem.device != worker.device:
            raise CommandError(f"{problem} waits for validation on {problem.device}; run this on a "
                               f"{problem.device} host (or start an evaluator there).")
        say(f"Validating {problem} in a sandbox…")

        def done():
            problem.refresh_from_db()
            return problem.validation_status not in waiting

        try:
            worker.wait(done)
        except KeyboardInterrupt:
            raise CommandError("Interrupted while validating.") from None
    problem.refresh_from_db()
    if problem.validation_status != Problem.Validation.OK:
        raise CommandError(f"{problem} did not pass validation: {problem.validation_reason}")
    return problem
