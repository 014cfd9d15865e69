"""The context pack: what every proposer call shows besides its task, chosen and trimmed here.

Sections, each plain data rendered to text: the target's facts, the baselines, the bank of the
search's best kernels (up to a token budget), a kernel with its verdict, the runner's reason and
error table, and the ideas tried so far. The wording of instructions lives in prompts.py; this
module decides what is shown and how much of it. Facts come from whatever the worker recorded,
so every key may be missing: a missing one is left out, never guessed.
"""

import re

from memory.keys import technique_of

from .base import KernelContext, ProblemContext, TriedIdea

BANK_TOKENS = 6000  # what the bank may take of a prompt (about 4 characters a token)
BANK_KERNELS = 4
PRECISION_ORDER = ("fp64", "fp32", "tf32", "fp16", "bf16", "fp8", "int8")
LOG_CHARS = 4000  # the tail of a compile log or stderr that a repair sees
REASONS_SHOWN = 3
BRIEF_CHARS = 160  # of each brief in the ideas history
PRIOR_TOKENS = 900  # what the team's priors may take of an ideas prompt
PRIOR_TEXT_CHARS = 120  # of each title or failure reason another search wrote
MENU_TOKENS = 600  # the playbook's recipes offered in a search's first ideas call


def approx_tokens(text: str) -> int:
    return len(text) // 4 + 1


def _number(value, unit: str, scale: float = 1.0, digits: int = 4) -> str:
    if not isinstance(value, (int, float)) or isinstance(value, bool):
        return ""
    if isinstance(value, int) and scale == 1:
        return f"{value} {unit}".strip()
    return f"{value / scale:.{digits}g} {unit}".strip()


GPU_FACTS = (  # (key, label, unit, scale)
    ("sm_count", "streaming multiprocessors", "", 1),
    ("compute_capability", "compute capability", "", 1),
    ("memory_bytes", "device memory", "GiB", 2**30),
    ("shared_mem_per_block", "shared memory per block (default)", "KiB", 1024),
    ("shared_mem_per_block_optin", "shared memory per block (opt-in)", "KiB", 1024),
    ("shared_mem_per_sm", "shared memory per SM", "KiB", 1024),
    ("registers_per_block", "32-bit registers per block", "", 1),
    ("registers_per_sm", "32-bit registers per SM", "", 1),
    ("l2_bytes", "L2 cache", "MiB", 2**20),
    ("sm_clock_mhz", "SM clock", "MHz", 1),
    ("mem_clock_mhz", "memory clock", "MHz", 1),
    ("bandwidth_gbs", "measured memory bandwidth", "GB/s", 1),
)
CPU_FACTS = (
    ("cores", "cores", "", 1),
    ("threads", "threads the runner uses", "", 1),
    ("vector_width_bits", "widest vector registers", "bits", 1),
)


def target_lines(device: str, facts: dict) -> list[str]:
    """The target's facts as lines, tolerant of any key being absent or of an odd type."""
    facts = facts if isinstance(facts, dict) else {}
    lines = [f"- device: {facts['name']}"] if isinstance(facts.get("name"), str) and facts["name"] else []
    for key, label, unit, scale in (GPU_FACTS if device == "cuda" else CPU_FACTS):
        value = facts.get(key)
        if isinstance(value, str) and value:
            lines.append(f"- {label}: {value}")
        elif text := _number(value, unit, scale):
            lines.append(f"- {label}: {text}")
    tflops = facts.get("tflops")
    if isinstance(tflops, dict):
        order = {name: i for i, name in enumerate(PRECISION_ORDER)}  # narrowest last, whatever the record's order
        rates = [f"{name} {_number(rate, 'TFLOP/s')}" for name, rate in
                 sorted(tflops.items(), key=lambda item: (order.get(item[0], len(order)), item[0]))
                 if _number(rate, "")]
        if rates:
            lines.append(f"- measured matrix rates: {', '.join(rates)}")
    caches = facts.get("caches")
    if isinstance(caches, dict) and caches:
        lines.append("- caches: " + ", ".join(f"{k} {v}" for k, v in caches.items()))
    flags = facts.get("flags")
    if isinstance(flags, (list, tuple)) and flags:
        lines.append("- vector instruction sets: " + " ".join(str(f) for f in flags[:40]))
    return lines


def baseline_line(problem: ProblemContext) -> str:
    parts = []
    if problem.eager_ms:
        parts.append(f"PyTorch eager {problem.eager_ms:.4g} ms")
    if problem.compile_ms:
        parts.append(f"torch.compile {problem.compile_ms:.4g} ms")
    return ", ".join(parts)


def fit_bank(bank: list[KernelContext], budget_tokens: int = BANK_TOKENS) -> list[KernelContext]:
    """The fastest bank kernels whose sources fit the budget together (the first always does)."""
    chosen, used = [], 0
    for kernel in bank[:BANK_KERNELS]:
        cost = approx_tokens(kernel.source)
        if chosen and used + cost > budget_tokens:
            break
        chosen.append(kernel)
        used += cost
    return chosen


def verdict_summary(kernel: KernelContext) -> str:
    """"correct, median 0.7 ms, 2.00x vs eager, ..." or the failure verdict."""
    if kernel.status != "correct" or kernel.median_ms is None:
        return kernel.status
    fared = f"correct, median {kernel.median_ms:.4g} ms"
    if kernel.speedup_vs_eager:
        fared += f", {kernel.speedup_vs_eager:.2f}x vs eager"
        if kernel.paired_eager_ms:  # not the validation's eager time: the one the ratio was measured against
            fared += f" (eager {kernel.paired_eager_ms:.4g} ms, timed beside it)"
    if kernel.speedup_vs_compile:
        fared += f", {kernel.speedup_vs_compile:.2f}x vs torch.compile"
    if kernel.speedup_vs_parent:
        fared += f", {kernel.speedup_vs_parent:.2f}x vs its parent"
    if kernel.speed_of_light:
        fared += f", {kernel.speed_of_light}"
    return fared


def error_table(rows: list) -> str:
    """The runner's per-distribution correctness rows as a small table ("" when none)."""
    lines = []
    for row in rows or []:
        if not isinstance(row, dict):
            continue
        if row.get("skipped"):
            lines.append(f"{row.get('name', '?')}: skipped ({row.get('skip_reason', 'no reason given')})")
            continue
        passed = {True: "passed", False: "FAILED", None: "not run"}.get(row.get("passed"), "not run")
        numbers = [f"{label} {row[key]:.3g}" for key, label in
                   (("err", "err"), ("ref_fp32_err", "PyTorch fp32 err"), ("max_abs_err", "max abs error"))
                   if isinstance(row.get(key), (int, float))]
        lines.append(f"{row.get('name', '?')}: {passed}" + (f" ({', '.join(numbers)})" if numbers else ""))
    return "\n".join(lines)


def idea_key(title: str) -> str:
    """An idea's title as compared for repeats: case, spacing and punctuation aside."""
    return " ".join("".join(c if c.isalnum() else " " for c in title.lower()).split())


def repeat_key(title: str, technique: str) -> tuple[str, str]:
    """What makes a proposed idea a repeat of one tried: the same title (idea_key) with the same technique."""
    return idea_key(title), technique_of(technique)


def tried_line(idea: TriedIdea) -> str:
    reasons = "; ".join(r[:300] for r in idea.reasons[:REASONS_SHOWN])
    tag = f" [{idea.technique}]" if idea.technique and idea.technique != "other" else ""
    line = f"- {idea.title}{tag}: {idea.description} => {idea.outcome}" + (f" (why: {reasons})" if reasons else "")
    return line + "".join(f"\n  - brief {i + 1}: {brief[:BRIEF_CHARS]} => {fared}"
                          for i, (brief, fared) in enumerate(idea.briefs))


def log_tail(text: str, chars: int = LOG_CHARS) -> str:
    return text[-chars:] if text else ""


_ERROR_LINE = re.compile(r"\berror\b", re.IGNORECASE)


def compile_log(text: str, chars: int = LOG_CHARS) -> str:
    """A compile log from the line before its first error line (the compiler's first errors come first;
    later ones often follow from them), else its tail."""
    lines = text.splitlines()
    first = next((i for i, line in enumerate(lines) if _ERROR_LINE.search(line)), None)
    if first is None:
        return log_tail(text, chars)
    return "\n".join(lines[max(0, first - 1):])[:chars]


def prior_line(stats) -> str:
    """One technique's record (memory.bank.Stats) as structured numbers only: no one's words."""
    line = (f"- {stats.technique} (rated {stats.rating:.2f}): {stats.attempts} idea(s), {stats.successes} faster "
            "than their parent")
    line += f" ({stats.success_rate:.0%})"
    if stats.median_gain is not None:
        line += f", median gain {stats.median_gain:.2f}x, best {stats.best_gain:.2f}x"
    if stats.cost_usd:
        line += f", ${stats.cost_usd / stats.attempts:.3f} an idea"
    return line


def prior_words(stats) -> list[str]:
    """What other searches' ideas said (titles that worked, reasons of failures), each capped: for a fence."""
    words = [f"{stats.technique} worked: {title[:PRIOR_TEXT_CHARS]} ({gain:.2f}x)" for title, gain in stats.examples]
    words += [f"{stats.technique} failed {count}x: {reason[:PRIOR_TEXT_CHARS]}" for reason, count in stats.failures]
    return words


def fit_priors(priors: list, budget_tokens: int = PRIOR_TOKENS) -> tuple[list[str], list[str]]:
    """(lines, words) of the best-rated techniques that fit the budget together; those never tried on the
    similar problems share one line, each with its rating."""
    untried = [s for s in priors if not s.attempts]
    lines = ["- not tried on similar problems yet: " + ", ".join(f"{s.technique} (rated {s.rating:.2f})"
                                                                  for s in untried)] if untried else []
    words, used = [], approx_tokens(lines[0]) if lines else 0
    for stats in (s for s in priors if s.attempts):
        line, said = prior_line(stats), prior_words(stats)
        cost = approx_tokens(line + "".join(said))
        if used + cost > budget_tokens:
            break
        lines.insert(len(lines) - bool(untried), line)
        words += said
        used += cost
    return lines, words


def fit_menu(menu: list, budget_tokens: int = MENU_TOKENS) -> list[str]:
    """The playbook's recipes as "title [technique]: description" lines, within the budget."""
    lines, used = [], 0
    for title, technique, description in menu:
        line = f"- {title} [{technique}]: {description[:PRIOR_TEXT_CHARS * 2]}"
        if used + approx_tokens(line) > budget_tokens:
            break
        lines.append(line)
        used += approx_tokens(line)
    return lines
