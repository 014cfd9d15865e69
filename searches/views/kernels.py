"""Kernel page (idea, source, diff, verdict details, the exchange that produced it), its
exports (standalone file, reproduction bundle) and its actions (rerun, approve)."""

import io
import json
import zipfile

from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.core.exceptions import PermissionDenied, ValidationError
from django.http import Http404, HttpResponse, JsonResponse
from django.shortcuts import redirect, render
from django.utils.safestring import mark_safe
from django.views.decorators.http import require_POST

from lib.diff_table import diff_rows, diff_stats, render_diff
from lib.plots import timing_chart
from lib.ratelimit import limits_sandbox_work
from live import events as live_events

from .. import selectors, services
from ..models import Kernel, ShareLink, Verdict
from .searches import error_text


def get_kernel(code) -> Kernel:
    try:
        return selectors.kernel_by_code(code)
    except Kernel.DoesNotExist:
        raise Http404("No kernel has this code.") from None


def kernel_context(kernel: Kernel, *, shared: bool = False) -> dict:
    runs = selectors.kernel_runs(kernel=kernel)
    run = selectors.kernel_primary_run(runs)
    parent = kernel.parent
    diff = None
    if parent is not None:
        rows = diff_rows(parent.source, kernel.source)
        diff = {"html": mark_safe(render_diff(rows, left_title=f"parent: {parent}", right_title=str(kernel))),  # noqa: S308
                "stats": diff_stats(rows)}
    correctness = (run.correctness or {}) if run else {}
    profile_run, profile = selectors.kernel_profile(runs)
    return {
        "kernel": kernel, "problem": kernel.problem, "search": kernel.search, "idea": kernel.idea,
        "parent": parent, "call": kernel.call, "runs": runs, "run": run, "diff": diff,
        "correctness": correctness, "distributions": correctness.get("per_distribution") or [],
        "timing": (run.timing or {}) if run else {},
        "sol": selectors.speed_of_light(kernel.problem, kernel),
        "timing_chart": mark_safe(timing_chart(run.timing if run else None)),  # noqa: S308  numbers only
        "environment": (run.environment or {}) if run else {},
        "baseline": (run.baseline or {}) if run else {},
        "provenance": selectors.provenance(runs),
        "profile": profile, "profile_run": profile_run,
        "shared": shared,
    }


def kernel_stream(kernel: Kernel) -> dict:
    """The event stream that tells this kernel's changes: its search's, or its problem's for a kernel
    of no search. `after` is read before the page's rows: the replay may repeat, never miss."""
    if kernel.search_id:
        return {"ws": f"/ws/searches/{kernel.search.code}/",
                "after": live_events.last_seq(live_events.SEARCH, kernel.search_id)}
    return {"ws": f"/ws/problems/{kernel.problem.code}/",
            "after": live_events.last_seq(live_events.PROBLEM, kernel.problem_id)}


@login_required
def kernel_detail(request, code):
    kernel = get_kernel(code)
    stream = kernel_stream(kernel)
    context = kernel_context(kernel)
    candidates = (Kernel.objects.filter(problem=kernel.problem, status=Verdict.CORRECT).exclude(pk=kernel.pk)
                  .order_by("median_ms")[:20])
    context.update({
        "children": kernel.children.order_by("id")[:50],
        "compare_candidates": candidates,
        "pending_rerun": selectors.kernel_pending_rerun(kernel=kernel),
        "queue_note": selectors.queue_wait_text(selectors.queue_for_kernels([kernel.id])),
        "progress": selectors.kernel_progress(kernel),
        "stream": stream,
        "share_links": selectors.share_links_for(kernel=kernel, kind=ShareLink.Kind.KERNEL),
        "share_kind": ShareLink.Kind.KERNEL,
        "may_approve": services.may_approve(kernel, request.user),
    })
    return render(request, "searches/kernel/detail.html", context)


@login_required
def kernel_status(request, code):
    """What the kernel page's poll shows until the verdict lands (static/js/kernel_live.js)."""
    return JsonResponse(selectors.kernel_progress(get_kernel(code)))


def _safe_line(text) -> str:
    """One line for a Python comment header (no line breaks can sneak code in)."""
    return " ".join(str(text).split())


def standalone_source(kernel: Kernel) -> str:
    run = selectors.kernel_primary_run(selectors.kernel_runs(kernel=kernel))
    env = (run.environment or {}) if run else {}
    header = [
        f"# KernelLab kernel {kernel.code}: {_safe_line(kernel)}",
        f"# Problem: {_safe_line(kernel.problem)} ({kernel.problem.code})",
        f"# Verdict: {kernel.status}" + (f", median {kernel.median_ms:.4g} ms" if kernel.median_ms else "")
        + (f", {kernel.speedup_vs_eager:.2f}x vs eager" if kernel.speedup_vs_eager else "")
        + (f", {kernel.speedup_vs_compile:.2f}x vs torch.compile" if kernel.speedup_vs_compile else ""),
        f"# Measured on: {_safe_line(env.get('device_name') or kernel.device_name or 'unknown device')}",
        "# KernelBench format: a module defining ModelNew, next to the problem's Model/get_inputs.",
        "",
    ]
    return "\n".join(header) + kernel.source


def evaluate_command(kernel: Kernel, seed) -> str:
    problem = kernel.problem
    device = kernel.search.device if kernel.search_id else problem.device
    parts = ["python", "-m", "runner", "evaluate", "problem.py", "kernel.py", "--device", device]
    if seed is not None:
        parts += ["--seed", str(seed)]
    if problem.atol is not None:
        parts += ["--atol", repr(problem.atol)]
    if problem.rtol is not None:
        parts += ["--rtol", repr(problem.rtol)]
    if kernel.search_id and kernel.search.allow_library:
        parts.append("--allow-library")
    return " ".join(parts + ["--json"])


def bundle_bytes(kernel: Kernel) -> bytes:
    run = selectors.kernel_primary_run(selectors.kernel_runs(kernel=kernel))
    seed = run.seed if run else None
    command = evaluate_command(kernel, seed)
    readme = "\n".join([
        f"# Reproduce KernelLab kernel {kernel.code}",
        "",
        f"Problem: {_safe_line(kernel.problem)} ({kernel.problem.code})",
        f"Kernel: {_safe_line(kernel)}; recorded verdict: {kernel.status}"
        + (f", median {kernel.median_ms:.6g} ms" if kernel.median_ms else ""),
        f"Seed: {seed if seed is not None else 'not recorded (the runner picks one and reports it)'}",
        "",
        "Run from a KernelLab checkout (the `runner` package), with this folder as the working directory:",
        "",
        f"    {command}",
        "",
        "environment.json is the hardware and software of the recorded run; result.json its full verdict.",
        "",
    ])
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w", zipfile.ZIP_DEFLATED) as zf:
        zf.writestr("problem.py", kernel.problem.source)
        zf.writestr("kernel.py", kernel.source)
        zf.writestr("README.md", readme)
        zf.writestr("command.txt", command + "\n")
        zf.writestr("environment.json", json.dumps((run.environment if run else None) or {}, indent=2))
        zf.writestr("result.json", json.dumps((run.result if run else None) or {}, indent=2))
    return buffer.getvalue()


@login_required
def kernel_export(request, code):
    kernel = get_kernel(code)
    response = HttpResponse(standalone_source(kernel), content_type="text/x-python; charset=utf-8")
    response["Content-Disposition"] = f'attachment; filename="kernel_{str(kernel.code)[:8]}.py"'
    return response


@login_required
def kernel_bundle(request, code):
    kernel = get_kernel(code)
    response = HttpResponse(bundle_bytes(kernel), content_type="application/zip")
    response["Content-Disposition"] = f'attachment; filename="kernellab_{str(kernel.code)[:8]}.zip"'
    return response


@login_required
@require_POST
@limits_sandbox_work
def kernel_rerun(request, code):
    kernel = get_kernel(code)
    try:
        services.kernel_request_rerun(kernel=kernel, user=request.user)
    except (ValidationError, PermissionDenied) as error:
        messages.error(request, f"Could not request a rerun: {error_text(error)}")
    else:
        messages.success(request, "Verified rerun requested: a fresh process with a new seed will time it again.")
    return redirect("kernel_detail", code=kernel.code)


@login_required
@require_POST
@limits_sandbox_work
def kernel_profile(request, code):
    """Profile on demand: every correct evaluation returns the kernel's profile, so this queues one
    (a verified rerun, fresh seed; on a GPU with Nsight Compute's counters where the host allows them)
    and the page shows its profile once it is done."""
    kernel = get_kernel(code)
    try:
        services.kernel_request_rerun(kernel=kernel, user=request.user, counters=True)
    except (ValidationError, PermissionDenied) as error:
        messages.error(request, f"Could not request a profile: {error_text(error)}")
    else:
        messages.success(request, "Profile requested: a verified rerun will measure it; it shows here when done.")
    return redirect("kernel_detail", code=kernel.code)


@login_required
@require_POST
def kernel_approve(request, code):
    kernel = get_kernel(code)
    try:
        services.kernel_approve(kernel=kernel, user=request.user)
    except (ValidationError, PermissionDenied) as error:
        messages.error(request, f"Could not approve: {error_text(error)}")
    else:
        messages.success(request, "Approved: the kernel now takes its place in the leaderboard.")
    return redirect("kernel_detail", code=kernel.code)
