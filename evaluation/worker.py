"""The evaluation worker: claims jobs of its device and runs them through warm runner sandboxes.

One worker per GPU (or one for the CPU). It never executes problem or kernel code itself and
never imports torch or cupy: `runner.Pool` runs every job in a fresh sandbox process. While a
job runs, a thread renews its lease; a heartbeat goes to the Worker table. What a job comes to (its
verdict, its failure, its phases) goes to the sink its owner registered (evaluation/sink.py); with
none registered the worker refuses to start. SIGTERM (or Ctrl-C)
stops it cleanly: a running job is handed back to the queue without using up an attempt.
A worker that is SIGKILLed never reports: its heartbeat goes stale (or it restarts under the
same name, which frees its old leases at once) and the job is claimed again, counting an attempt
if its sandbox had started the run (evaluation/leases.py), so a job that keeps killing its worker
fails for good after `max_attempts`. A worker that lost its job to another is fenced: it records
no verdict for it.
"""

import logging
import os
import signal
import socket
import threading
import time
from concurrent.futures import Future
from queue import SimpleQueue

from django.conf import settings
from django.db import DatabaseError, OperationalError, close_old_connections, transaction
from django.db.models import F
from django.utils import timezone

from lib.leases import LeaseRenewer

from . import leases, queue, sink
from .devices import record_device_facts
from .models import EvaluationJob
from .models import Worker as WorkerRow

log = logging.getLogger(__name__)

HEARTBEAT_SECONDS = WorkerRow.HEARTBEAT_SECONDS  # the Workers page reads it from the model
REKICK_SECONDS = 60


class WorkerStopping(Exception):
    """Raised inside a running job when the worker is asked to stop."""


def default_name(device: str) -> str:
    """Stable per host and device (and GPU, where CUDA_VISIBLE_DEVICES picks one): a restarted
    evaluator takes the name of the run it replaces and frees that run's jobs at once."""
    gpus = os.environ.get("CUDA_VISIBLE_DEVICES", "").strip() if device == "cuda" else ""
    return f"{socket.gethostname()}-{device}" + (f"-gpu{gpus.replace(',', '_')}" if gpus else "")


class NameInUse(RuntimeError):
    """Another live evaluator on this host already runs under this name."""


def check_name_free(name: str) -> None:
    """Refuse a name whose holder is alive: freeing its jobs would run them twice. A holder on
    this host is alive when its pid is; one elsewhere, while its heartbeat is fresh."""
    row = WorkerRow.objects.filter(name=name).values("host", "pid", "heartbeat_at").first()
    if not row or not row["heartbeat_at"] or not row["pid"] or row["pid"] == os.getpid():
        return
    if row["heartbeat_at"] < leases.stale_before(timezone.now()):
        return
    if row["host"] == socket.gethostname():
        try:
            os.kill(row["pid"], 0)
        except ProcessLookupError:
            return  # killed: this is its restart
        except PermissionError:
            pass
    raise NameInUse(f"an evaluator named {name!r} is running on {row['host']} (pid {row['pid']}); "
                    "give this one another --name")


class EvaluationWorker:
    def __init__(self, *, name: str, device: str, pool_size: int = 1, poll_seconds: float = 0.5,
                 rekick_seconds: float = REKICK_SECONDS, jobs_in_flight: int = 1, quick_in_flight: int | None = None):
        self.name = name
        self.device = device
        self.pool_size = pool_size
        # Several jobs at once: the next candidates import and compile while one holds the device
        # (the runner's device lock covers only correctness and timing). Of those, at most
        # `quick_in_flight` build nothing long (leases.builds): they would only queue for the device.
        self.jobs_in_flight = max(1, int(jobs_in_flight))
        self.quick_in_flight = max(1, min(self.jobs_in_flight, int(quick_in_flight or self.jobs_in_flight)))
        self.peak_in_flight = self.peak_quick = 0
        self.poll_seconds = poll_seconds
        self.rekick_seconds = rekick_seconds
        self.stopping = False
        self._in_job = False
        self._last_heartbeat = 0.0
        self._last_rekick = 0.0
        self.device_name = ""
        self.jobs_done = 0
        self.phase_writer = PhaseWriter()

    # --- lifecycle ---------------------------------------------------------------------------

    def run(self, *, once: bool = False, should_stop=None) -> int:
        """Work until stopped. `once`: exit when the queue has nothing for this device.
        `should_stop`: a callable checked between jobs (the foreground search command)."""
        import runner  # the sandbox pool; runner itself keeps torch out of this process

        sink.current()  # NoSink: nothing would take the verdicts, so claim nothing
        check_name_free(self.name)
        self._install_signal_handlers()
        freed = leases.expire_leases_of(self.name)
        if freed:
            log.warning("%s: %d job(s) held by an earlier run under this name were freed", self.name, freed)
        self._heartbeat(force=True, started=True)
        # Device facts (model, memory, SMs, caches, clocks, ceilings) onto the worker row: evaluation/devices.py
        self.device_name = record_device_facts(worker_name=self.name, device=self.device).get("name") or self.device_name
        try:
            with runner.Pool(device=self.device, size=self.pool_size) as pool:
                if self.jobs_in_flight > 1:
                    return self._run_pipelined(pool, once=once, should_stop=should_stop)
                while not self.stopping:
                    if should_stop is not None and should_stop():
                        break
                    self._heartbeat()
                    self._maybe_rekick()
                    job = leases.claim(self.name, self.device)
                    if job is None:
                        if once:
                            break
                        self._sleep(self.poll_seconds)
                        continue
                    try:
                        self.peak_in_flight = 1
                        self.run_job(pool, job)
                    except WorkerStopping:
                        break
        finally:
            self._heartbeat(force=True, current_job=None)
            close_old_connections()
        return self.jobs_done

    def _run_pipelined(self, pool, *, once: bool, should_stop) -> int:
        """Up to `jobs_in_flight` jobs, each on a thread of its own. On stop the jobs still running
        are handed back at once (their threads record nothing and die with the process)."""
        running: dict[threading.Thread, EvaluationJob] = {}
        quick: set[threading.Thread] = set()
        while not self.stopping and not (should_stop is not None and should_stop()):
            self._heartbeat()
            self._maybe_rekick()
            running = {t: j for t, j in running.items() if t.is_alive()}
            quick = {t for t in quick if t in running}
            job = None
            if len(running) < self.jobs_in_flight:
                job = leases.claim(self.name, self.device, quick=len(quick) < self.quick_in_flight)
            if job is not None:
                thread = threading.Thread(target=self._job_thread, args=(pool, job), daemon=True,
                                          name=f"{self.name}-job-{job.id}")
                running[thread] = job
                if not leases.builds(job):
                    quick.add(thread)
                self.peak_in_flight = max(self.peak_in_flight, len(running))
                self.peak_quick = max(self.peak_quick, len(quick))
                thread.start()
                continue
            if once and not running:
                break
            self._sleep(0.05 if running else self.poll_seconds)
        self.stopping = True
        for thread, job in running.items():
            if thread.is_alive():
                _with_retries(lambda job=job: leases.release(job, self.name))
        return self.jobs_done

    def _job_thread(self, pool, job: EvaluationJob) -> None:
        try:
            self.run_job(pool, job)
        except WorkerStopping:
            pass
        finally:
            close_old_connections()

    def _install_signal_handlers(self) -> None:
        if threading.current_thread() is not threading.main_thread():
            return
        for signum in (signal.SIGTERM, signal.SIGINT):
            signal.signal(signum, self._on_signal)

    def _on_signal(self, signum, frame) -> None:
        self.stopping = True
        if self._in_job and self.jobs_in_flight == 1:  # pipelined: the main loop hands the jobs back
            raise WorkerStopping(f"signal {signum}")

    def _sleep(self, seconds: float) -> None:
        end = time.monotonic() + seconds
        while not self.stopping and time.monotonic() < end:
            time.sleep(min(0.1, seconds))

    # --- one job -------------------------------------------------------------------------------

    def run_job(self, pool, job: EvaluationJob) -> None:
        try:
            self._run_job(pool, job)
        except sink.NoSink:  # nowhere to put its verdict: the job goes back to the queue, unspent
            _with_retries(lambda: leases.release(job, self.name, error="the evaluator had no sink for verdicts"))
            raise

    def _run_job(self, pool, job: EvaluationJob) -> None:
        sink.current()  # NoSink before anything runs
        if not self._start_run(job):
            return
        clock = PhaseClock(job.id, self.name, self.phase_writer)
        clock.enter("starting")  # until a warm sandbox has the job
        with pool.scope(on_phase=clock.enter) as run:
            # Fenced: once another worker holds the job, its sandboxes here are killed at once.
            renewer = job_renewer(job.id, self.name, on_lost=run.cancel)
            renewer.start()
            try:
                self._in_job = True
                try:
                    result = self._evaluate(pool, job)
                    if self.stopping and self.jobs_in_flight > 1:
                        raise WorkerStopping("stopping")  # handed back already: record nothing
                finally:
                    self._in_job = False
            except WorkerStopping:
                renewer.stop()
                leases.release(job, self.name)
                log.info("%s: stopping; job %s handed back to the queue", self.name, job.id)
                raise
            except Exception as exc:
                renewer.stop()
                if renewer.lost.is_set():  # the job is another worker's now: nothing of it is ours to touch
                    log.warning("%s: job %s was claimed by another worker; its run here was stopped (%s)",
                                self.name, job.id, exc)
                    return
                self._run_failed(job, exc)
                return
        renewer.stop()
        clock.drain()  # the phases so far written before the verdict's transaction, none after it
        if renewer.lost.is_set() or not _with_retries(lambda: self._record(job, result, clock)):
            log.warning("%s: job %s was claimed by another worker while it ran here; its verdict is dropped",
                        self.name, job.id)
            return
        self.jobs_done += 1

    def _run_failed(self, job: EvaluationJob, exc: Exception) -> None:
        """The runner itself broke (not a verdict): the job is retried elsewhere, or failed now
        when no kernel can be judged."""
        import runner

        if isinstance(exc, runner.ProblemInvalid):  # no kernel can be judged: say so now
            reason = f"the problem failed validation: {exc}"
            _with_retries(lambda: _fail_now(job, self.name, reason))
            return
        if isinstance(exc, runner.DeviceBusy):  # the worker's device, not the job: run it again later
            log.warning("%s: job %s could not run on this device: %s", self.name, job.id, exc)
            error = f"the worker's device could not run it (an infrastructure failure, not a verdict): {exc}"
        else:
            log.exception("%s: job %s could not run", self.name, job.id)
            error = f"the runner failed: {exc}"
        _with_retries(lambda: leases.release(job, self.name, error=error, count_attempt=True))

    def _start_run(self, job: EvaluationJob) -> bool:
        """Up to the moment the sandbox is given the job: a database fault here is the evaluator's,
        not the job's, and spends none of its attempts. False: the job is not to be run here."""
        try:
            self._mark_started(job)
            _ = job.problem, job.kernel  # loaded now, not once the run has started
            if _with_retries(lambda: leases.mark_run_started(job.id, self.name)):
                return True
            log.warning("%s: job %s was claimed by another worker before it ran here", self.name, job.id)
        except DatabaseError as exc:
            log.exception("%s: job %s could not start", self.name, job.id)
            error = f"the database failed before the run began: {exc}"
            _with_retries(lambda: leases.release(job, self.name, error=error, count_infra=True))
        return False

    def _evaluate(self, pool, job: EvaluationJob) -> dict:
        problem = job.problem
        if job.purpose == EvaluationJob.Purpose.VALIDATE:
            return pool.validate(problem.source, device=job.device, timeout=settings.RUNNER_TIMEOUT)
        options = job.options or {}
        tool = options.get("tool") if job.purpose == EvaluationJob.Purpose.TOOL else None
        rule = options.get("rule") or "kernellab"
        # KernelBench's rule brings its own tolerance; the problem's is KernelLab's
        atol, rtol = (problem.atol, problem.rtol) if rule == "kernellab" else (None, None)
        return pool.evaluate(  # a tool run judges a draft like a candidate; `compile` only builds it
            problem.source, options.get("source", "") if tool else job.kernel.source, device=job.device,
            seed=job.seed, timeout=settings.RUNNER_TIMEOUT, atol=atol, rtol=rtol,
            allow_library=bool(options.get("allow_library")), rule=rule, more_baselines=options.get("baselines") or (),
            compile_only=tool == "compile", untimed=tool == "check", counters=bool(options.get("counters")),
        )

    def _mark_started(self, job: EvaluationJob) -> None:
        _with_retries(lambda: sink.current().job_started(job))
        self._heartbeat(force=True, current_job=job)

    def _record(self, job: EvaluationJob, result: dict, clock: "PhaseClock | None" = None) -> bool:
        """The verdict, recorded only while this worker still holds the job (checked and kept in
        the same transaction): False when another worker took it meanwhile."""
        with transaction.atomic():
            if not leases.held_for_record(job.id, self.name):
                return False
            if clock is not None:  # the last phase's seconds, kept with the verdict
                clock.close()
            sink.current().verdict(job, result)
            WorkerRow.objects.filter(name=self.name).update(jobs_done=F("jobs_done") + 1, current_job=None)
        self.device_name = (result.get("environment") or {}).get("device_name") or self.device_name
        return True

    # --- bookkeeping ---------------------------------------------------------------------------

    def _heartbeat(self, *, force: bool = False, current_job="keep", started: bool = False) -> None:
        now = time.monotonic()
        if not force and now - self._last_heartbeat < HEARTBEAT_SECONDS:
            return
        self._last_heartbeat = now
        fields = {"host": socket.gethostname(), "pid": os.getpid(), "device": self.device,
                  "heartbeat_at": timezone.now()}
        if started:  # a restart under the same name is a new life of the worker
            fields["started_at"] = fields["heartbeat_at"]
        if self.device_name:
            fields["device_name"] = self.device_name
        if current_job != "keep":
            fields["current_job"] = current_job
        try:
            with transaction.atomic():
                WorkerRow.objects.update_or_create(name=self.name, defaults=fields)
        except OperationalError as exc:  # the real error: "database is locked", "disk I/O error", read-only
            log.warning("%s: heartbeat skipped (database error: %s)", self.name, exc)

    def _maybe_rekick(self) -> None:
        now = time.monotonic()
        if self.rekick_seconds <= 0 or now - self._last_rekick < self.rekick_seconds:
            return
        self._last_rekick = now
        try:
            sink.current().stalled()
        except Exception:
            log.exception("%s: could not re-kick stalled searches", self.name)


class PhaseWriter:
    """Phase writes off the runs' threads, in order, on one daemon thread: a sandbox's message loop never
    waits on the database, and a write still retrying on a locked database never holds the process at
    exit (a ThreadPoolExecutor's thread is joined there)."""

    def __init__(self):
        self._tasks: SimpleQueue = SimpleQueue()
        self._thread: threading.Thread | None = None
        self._lock = threading.Lock()

    def submit(self, fn, *args) -> Future:
        future: Future = Future()
        self._tasks.put((future, fn, args))
        with self._lock:
            if self._thread is None:
                self._thread = threading.Thread(target=self._loop, name="phases", daemon=True)
                self._thread.start()
        return future

    def _loop(self) -> None:
        while True:
            future, fn, args = self._tasks.get()
            if future.set_running_or_notify_cancel():
                try:
                    future.set_result(fn(*args))
                except BaseException as exc:
                    future.set_exception(exc)


class PhaseClock:
    """A job's phases as its run reports them (runner/host/phases.py), timed on this process's clock.
    `enter` is called on the run's thread and hands the write to `writer` (one thread, so in order);
    `close` writes the last phase's seconds at once, inside the verdict's transaction."""

    def __init__(self, job_id: int, worker_name: str, writer: PhaseWriter):
        self.job_id, self.worker_name, self.writer = job_id, worker_name, writer
        self.current, self.since = "", 0.0
        self.seconds: dict[str, float] = {}

    def _advance(self, phase: str) -> dict:
        now = time.monotonic()
        if self.current:
            self.seconds[self.current] = round(self.seconds.get(self.current, 0.0) + now - self.since, 3)
        self.current, self.since = phase, now
        return {"job_id": self.job_id, "worker": self.worker_name, "phase": phase,
                "started_at": timezone.now() if phase else None, "seconds": dict(self.seconds)}

    def enter(self, phase: str) -> None:
        change = self._advance(phase)
        self.writer.submit(_write_phase, change)

    def drain(self) -> None:
        try:
            self.writer.submit(int).result(timeout=30)
        except Exception:  # a stuck progress write is not worth the verdict
            log.warning("job %s: its phase writes did not finish", self.job_id)

    def close(self) -> None:
        sink.current().job_phase(**self._advance(""))


def _write_phase(change: dict) -> None:
    try:
        _with_retries(lambda: sink.current().job_phase(**change))
    except Exception:  # a progress line is not worth a job: the verdict is written on its own
        log.warning("job %s: its phase %r could not be written", change["job_id"], change["phase"], exc_info=True)
    finally:
        close_old_connections()


def job_renewer(job_id: int, worker_name: str, on_lost=None) -> LeaseRenewer:
    """While a job runs: keeps the worker's heartbeat going, so the Workers page sees it alive
    and no other worker takes its job, and the job's lease fresh. Every beat checks that the job
    is still held here; the renewer ends, `lost` set, when it is not."""
    lease_every = max(0.5, settings.JOB_LEASE_SECONDS / 3)
    renewed = time.monotonic()

    def beat() -> bool:
        nonlocal renewed
        WorkerRow.objects.filter(name=worker_name).update(heartbeat_at=timezone.now())
        if time.monotonic() - renewed < lease_every:
            return leases.holds(job_id, worker_name)
        renewed = time.monotonic()
        return leases.renew(job_id, worker_name)

    return LeaseRenewer(beat, interval=min(lease_every, HEARTBEAT_SECONDS), name=f"lease-{job_id}", on_lost=on_lost)


def _fail_now(job: EvaluationJob, worker_name: str, reason: str) -> None:
    with transaction.atomic():
        job = EvaluationJob.objects.select_for_update().get(pk=job.pk)
        if job.status == EvaluationJob.Status.LEASED and job.lease_owner == worker_name:
            queue.fail(job, reason)


def _with_retries(action, attempts: int = 5):
    """Run a short write, retrying while the database is busy (SQLite under load)."""
    for attempt in range(attempts):
        try:
            return action()
        except OperationalError:
            if attempt == attempts - 1:
                raise
            time.sleep(0.5 * (attempt + 1))
