"""Writes on kernels: hand-written submissions, verdicts from the evaluation worker, verified
reruns and the approval of a quarantined kernel."""

import random

from django.conf import settings
from django.core.exceptions import PermissionDenied, ValidationError
from django.db import transaction
from django.db.models import F
from django.utils import timezone

from evaluation import queue
from evaluation.models import EvaluationJob
from evaluation.scheduling import Priority
from runner import NOISY_QUARANTINE
from searches.engine.kick import kick
from searches.models import BenchmarkRun, Kernel, Problem, Search, Verdict
from searches.selectors.speedups import baseline_of

from . import events
from .permissions import may_approve, require_steer

RERUN_TOLERANCE = 0.10  # without a paired speedup (GPU), a rerun reproduces when its median is within 10%


@transaction.atomic
def kernel_submit(*, user, problem: Problem, source: str, search: Search | None = None,
                  parent: Kernel | None = None, name: str = "", priority: Priority = Priority.INTERACTIVE,
                  allow_library: bool = False, rule: str = "", baselines=()) -> Kernel:
    """A hand-written kernel: evaluated like any candidate; inside a search it joins the tree as a user node.
    Its job counts against the person's cap (OverQuota over it: nothing is saved); a sweep passes BULK."""
    source = source or ""
    if not source.strip():
        raise ValidationError("The kernel source is empty.", code="source")
    if len(source.encode()) > settings.KERNEL_SOURCE_MAX_BYTES:
        raise ValidationError(f"The kernel source is larger than {settings.KERNEL_SOURCE_MAX_BYTES} bytes.",
                              code="source")
    if "ModelNew" not in source:
        raise ValidationError("A kernel module must define `class ModelNew(nn.Module)` (see the kernel format).",
                              code="source")
    if problem.validation_status == Problem.Validation.INVALID:
        raise ValidationError("This problem failed validation; fix it before submitting kernels.", code="problem")
    if search is not None:
        require_steer(search, user, "add kernels to it (submit it to the problem instead, or fork the search)")
    round_number = 0
    if search is not None:
        search = Search.objects.select_for_update().get(pk=search.pk)
        if search.problem_id != problem.pk:
            raise ValidationError("The search is on a different problem.", code="search")
        round_number = search.current_round
    if parent is not None and (search is None or parent.search_id != search.pk):
        raise ValidationError("The parent kernel must belong to the same search.", code="parent")
    kernel = Kernel.objects.create(
        problem=problem, search=search, parent=parent, round=round_number, name=(name or "").strip()[:200],
        source=source, origin=Kernel.Origin.USER, author=user,
    )
    purpose = EvaluationJob.Purpose.SEARCH if search is not None else EvaluationJob.Purpose.MANUAL
    if search is not None:  # judged as the search's own candidates are
        options = search.job_options()
    else:  # the caller says: a re-judged KernelBench run may leave work to PyTorch, judge by another rule
        options = {"allow_library": True} if allow_library else {}
        if rule and rule != "kernellab":  # a run's correctness rule (runner/common/rules.py)
            options["rule"] = rule
        if baselines:  # a run's baselines beside eager and torch.compile's default
            options["baselines"] = list(baselines)
    queue.enqueue_kernel(kernel, purpose=purpose, options=options, priority=priority, requested_by=user)
    if search is not None:
        events.publish_kernel(kernel, "kernel.created")
    return kernel


def _verdict_status(result: dict) -> tuple[str, str]:
    status = result.get("status")
    if status in Verdict.values and status not in (Verdict.PENDING, Verdict.EVALUATING, Verdict.NO_CODE,
                                                    Verdict.FAILED):
        return status, result.get("reason") or ""
    return Verdict.CRASHED, f"the runner answered with an unknown verdict {status!r}"


@transaction.atomic
def kernel_record_verdict(*, kernel: Kernel, job: EvaluationJob, result: dict) -> BenchmarkRun:
    """Store one runner verdict (the evaluation worker calls this). A second report for the same
    job returns the first run and changes nothing."""
    job = EvaluationJob.objects.select_for_update().get(pk=job.pk)
    existing = BenchmarkRun.objects.filter(job=job).first()
    if existing is not None:
        return existing
    kernel = Kernel.objects.select_for_update().get(pk=kernel.pk)
    status, reason = _verdict_status(result)
    environment = result.get("environment") or {}
    timing = result.get("timing") or {}
    compile_info = result.get("compile") or {}
    quarantine_reason = result.get("quarantine_reason") or ""
    quarantined, rule = bool(result.get("quarantined")), result.get("rule") or {}
    if rule.get("name", "kernellab") != "kernellab" and status == Verdict.CORRECT:
        # correct by another benchmark's rule, not KernelLab's: kept and shown, out of KernelLab's rankings
        quarantined = True
        quarantine_reason = (f"judged by {rule['name']}'s rule ({rule.get('version')}), not KernelLab's"
                             + (f"; {quarantine_reason}" if quarantine_reason else ""))
    if quarantined and kernel.problem.degenerate:  # the person reviewing it is told first
        quarantine_reason = f"the problem itself is degenerate ({kernel.problem.degenerate}); {quarantine_reason}"
    run = BenchmarkRun.objects.create(
        kernel=kernel, job=job, purpose=job.purpose, status=status, reason=reason,
        quarantined=quarantined, quarantine_reason=quarantine_reason,
        noisy_reason=str(result.get("noisy") or "")[:2000], seed=result.get("seed"), precision=result.get("precision") or "",
        compile_seconds=compile_info.get("seconds"), compile_log=compile_info.get("log") or "",
        correctness=result.get("correctness"), timing=result.get("timing"), baseline=result.get("baseline"),
        environment=environment, median_ms=timing.get("median_ms") if status == Verdict.CORRECT else None,
        speedup_vs_eager=result.get("speedup_vs_eager"), speedup_vs_compile=result.get("speedup_vs_compile"),
        device_name=environment.get("device_name") or "", worker=job.lease_owner, result=result,
    )
    job.status = EvaluationJob.Status.DONE
    job.finished_at = timezone.now()
    job.save(update_fields=["status", "finished_at"])
    if job.purpose == EvaluationJob.Purpose.RERUN and _only_noise_held_it_back(kernel, run):
        # A quiet rerun replaces a timing a disturbed device spoiled: its figures stand, unverified.
        kernel.quarantined, kernel.verified = False, False
        kernel.save(update_fields=["quarantined", "verified", *kernel.take_figures(run, Kernel.TIMING_FIGURES)])
    elif job.purpose == EvaluationJob.Purpose.RERUN:
        kernel.verified = _kernel_reproduced(kernel, run)
        kernel.save(update_fields=["verified"])
    else:
        kernel.reason_code = (result.get("reason_code") or "") if status == Verdict.REJECTED else ""
        kernel.evaluated_at = timezone.now()
        kernel.save(update_fields=[*kernel.take_figures(run), "reason_code", "evaluated_at"])
    if run.noisy_reason and run.quarantined and status == Verdict.CORRECT and job.purpose != EvaluationJob.Purpose.RERUN:
        _queue_rerun(kernel)  # out of the rankings until a quiet device times it again
    # The eager time the speedup used, so the page's "Best:" line shows it beside the kernel's.
    events.publish_kernel(kernel, "kernel.updated", baseline_of(result.get("paired"), run.baseline))
    if kernel.search_id:
        if job.purpose == EvaluationJob.Purpose.SEARCH:
            Search.objects.filter(pk=kernel.search_id).update(candidates_evaluated=F("candidates_evaluated") + 1)
            events.publish_search_progress(kernel.search_id)
        kick(kernel.search_id)  # a rerun's too: a round's ideas may wait for its counters (engine/evidence.py)
    return run


def _only_noise_held_it_back(kernel: Kernel, rerun: BenchmarkRun) -> bool:
    """The kernel is quarantined only because its timing was disturbed (the runner found nothing
    implausible), and this rerun is correct, quiet and plausible on the same GPU model."""
    original = kernel.runs.exclude(purpose=EvaluationJob.Purpose.RERUN).order_by("-id").first()
    return (kernel.quarantined and original is not None and bool(original.noisy_reason)
            and original.quarantine_reason.startswith(NOISY_QUARANTINE)
            and rerun.status == Verdict.CORRECT and not rerun.quarantined and not rerun.noisy_reason
            and bool(rerun.median_ms) and (not kernel.device_name or rerun.device_name == kernel.device_name))


def _kernel_reproduced(kernel: Kernel, rerun: BenchmarkRun) -> bool:
    """A rerun reproduces the kernel when, with a different seed on the same GPU model, it is
    correct again and its speedup agrees: on the CPU its paired speedup lies within the original's
    95% interval (a median can hold still while the paired speedup moves 3x); elsewhere its median
    is within 10% of the recorded one."""
    original = kernel.runs.exclude(purpose=EvaluationJob.Purpose.RERUN).exclude(pk=rerun.pk).order_by("-id").first()
    if rerun.status != Verdict.CORRECT or kernel.status != Verdict.CORRECT or not kernel.median_ms:
        return False
    if not rerun.median_ms or (original is not None and original.seed == rerun.seed):
        return False
    if kernel.device_name and rerun.device_name != kernel.device_name:
        return False
    interval = ((original.result or {}).get("paired") or {}).get("speedup_ci95") if original else None
    speedup = ((rerun.result or {}).get("paired") or {}).get("speedup")
    if interval and speedup is not None:
        return interval[0] <= speedup <= interval[1]
    return abs(rerun.median_ms - kernel.median_ms) <= RERUN_TOLERANCE * kernel.median_ms


@transaction.atomic
def kernel_request_rerun(*, kernel: Kernel, user, counters: bool = False) -> EvaluationJob:
    """Evaluate a correct kernel again with a fresh seed; its verdict sets `verified`. `counters`: a
    profile on demand, whose run on a GPU also reads Nsight Compute's counters where the host allows."""
    kernel = Kernel.objects.select_for_update().get(pk=kernel.pk)
    if kernel.status != Verdict.CORRECT:
        raise ValidationError("Only a correct kernel can be rerun for verification.", code="status")
    waiting = kernel.jobs.filter(purpose=EvaluationJob.Purpose.RERUN,
                                 status__in=EvaluationJob.UNFINISHED).first()
    if waiting is not None:
        if counters and waiting.status == EvaluationJob.Status.QUEUED and not waiting.options.get("counters"):
            waiting.options = {**waiting.options, "counters": True}
            waiting.save(update_fields=["options"])
        return waiting
    return _queue_rerun(kernel, user, counters)


def _queue_rerun(kernel: Kernel, user=None, counters: bool = False) -> EvaluationJob:
    """A person's request is interactive and counts against their cap; the system's (a noisy timing,
    the engine's elite rechecks) runs as search work."""
    used = set(kernel.runs.values_list("seed", flat=True))
    seed = random.SystemRandom().randrange(1, 2**62)
    while seed in used:
        seed = random.SystemRandom().randrange(1, 2**62)
    first = None if kernel.search_id else kernel.jobs.order_by("id").first()
    # judged again as first judged: a re-judged file keeps its library rule and correctness rule
    options = kernel.search.job_options() if kernel.search_id else dict((first and first.options) or {})
    options = {k: v for k, v in options.items() if k != "counters"}  # asked for by this request only
    if counters:
        options["counters"] = True
    priority = Priority.INTERACTIVE if getattr(user, "is_authenticated", False) else Priority.SEARCH
    return queue.enqueue_kernel(kernel, purpose=EvaluationJob.Purpose.RERUN, seed=seed, priority=priority,
                                options=options, requested_by=user)


def kernel_job_failed(*, job: EvaluationJob, reason: str, reason_code: str = "") -> None:
    """A kernel's job failed for good (it kept killing its worker, or the search was cancelled:
    `reason_code` Kernel.CANCELLED)."""
    if job.kernel_id is None:
        return
    if job.purpose == EvaluationJob.Purpose.RERUN:
        search_id = Kernel.objects.filter(pk=job.kernel_id).values_list("search_id", flat=True).first()
        if search_id:
            kick(search_id)  # a round's ideas waiting for its counters go on without them
        return
    kernel = Kernel.objects.select_for_update().get(pk=job.kernel_id)
    if BenchmarkRun.objects.filter(job=job).exists():
        return
    kernel.status, kernel.reason, kernel.reason_code = Verdict.FAILED, reason, reason_code
    kernel.save(update_fields=["status", "reason", "reason_code"])
    events.publish_kernel(kernel, "kernel.updated")
    if kernel.search_id:
        kick(kernel.search_id)


def kernel_approve(*, kernel: Kernel, user) -> Kernel:
    """Admit a quarantined (implausibly fast) kernel to the ranking, once a verified rerun in a
    fresh process reproduced it."""
    with transaction.atomic():
        kernel = Kernel.objects.select_for_update().get(pk=kernel.pk)
        if not kernel.quarantined:
            raise ValidationError("This kernel is not quarantined: it is ranked already when correct.")
        if kernel.status != "correct":
            raise ValidationError("Only a correct kernel can be approved.")
        if not kernel.verified:
            raise ValidationError("Request a verified rerun first: a quarantined kernel can be approved only after "
                                  "a rerun with a new seed in a fresh process reproduced its speedup (on the CPU its "
                                  "paired speedup within the first run's 95% interval, elsewhere its median within "
                                  "10%).")
        if not may_approve(kernel, user):
            raise PermissionDenied("A second person approves a quarantined kernel: ask a teammate or an administrator "
                                   "(you started its search or wrote it).")
        if kernel.approved_by_id is None:
            kernel.approved_by = user
            kernel.approved_at = timezone.now()
            kernel.save(update_fields=["approved_by", "approved_at"])
            events.publish_kernel(kernel, "kernel.updated")
    return kernel


def kernel_mark_evaluating(*, job: EvaluationJob) -> None:
    """A worker started the kernel's job: the tree shows it as evaluating."""
    if not job.kernel_id or job.purpose == EvaluationJob.Purpose.RERUN:
        return
    with transaction.atomic():
        kernel = Kernel.objects.select_for_update().get(pk=job.kernel_id)
        if kernel.status == Verdict.PENDING:
            kernel.status = Verdict.EVALUATING
            kernel.save(update_fields=["status"])
            events.publish_kernel(kernel, "kernel.updated")
