"""The search tree as HTML, built in one pass over plain dicts: a nested list of kernel nodes
joined by idea nodes. Built here rather than by template recursion so a 2,000-kernel search
renders in milliseconds. Every piece of text goes through `escape`. A crowd on one page shares one
render per change (`cached_for_search`)."""

import hashlib
import logging
import threading
from html import escape

from django.core.cache import cache

from ..models import Kernel, Verdict

log = logging.getLogger(__name__)

# Status -> (mark, label). The page's script gets the same table through json_script.
MARKS = {
    Verdict.PENDING: ("…", "Waiting"),
    Verdict.EVALUATING: ("◌", "Evaluating"),
    Verdict.CORRECT: ("✓", "Correct"),
    Verdict.INCORRECT: ("✗", "Incorrect"),
    Verdict.REJECTED: ("⊘", "Rejected: breaks a kernel rule"),  # wrong output shape is one, not only cheats
    Verdict.COMPILE_ERROR: ("⚙", "Compile error"),
    Verdict.RUNTIME_ERROR: ("!", "Runtime error"),
    Verdict.TIMEOUT: ("◷", "Timed out"),
    Verdict.CRASHED: ("☠", "Crashed"),
    Verdict.OOM: ("M", "Out of memory"),
    Verdict.NO_CODE: ("∅", "No code in the reply"),
    Verdict.FAILED: ("‼", "Evaluation failed"),
    Kernel.CANCELLED: ("–", Kernel.CANCELLED_LABEL),
}
QUARANTINE_MARK = ("⚠", "Quarantined: implausibly fast, outside the ranking until a verified rerun and an approval")


def kernel_label(k: dict) -> str:
    return k["name"] or f"kernel {str(k['code'])[:8]}"


def matching_ids(tree: dict, *, status: str = "", round_: int | None = None) -> set | None:
    """Kernel and idea node ids to show under a filter (matches plus their ancestors), or None
    when nothing is filtered."""
    if not status and round_ is None:
        return None

    def matches(k):
        if status == "quarantined":
            ok = k["quarantined"]
        else:
            ok = not status or k["status"] == status
        return ok and (round_ is None or k["round"] == round_)

    shown = set()

    def visit_kernel(k) -> bool:
        any_child = False
        for idea in tree["ideas_of_kernel"].get(k["id"], []):
            any_child |= visit_idea(idea)
        for child in tree["repairs_of_kernel"].get(k["id"], []):
            any_child |= visit_kernel(child)
        if any_child or matches(k):
            shown.add(("k", k["id"]))
            return True
        return False

    def visit_idea(idea) -> bool:
        any_child = False
        for k in tree["kernels_of_idea"].get(idea["id"], []):
            any_child |= visit_kernel(k)
        if any_child:
            shown.add(("i", idea["id"]))
        return any_child

    for root in tree["roots"]:
        visit_kernel(root)
    for idea in tree["root_ideas"]:
        visit_idea(idea)
    return shown


def render_tree(tree: dict, *, kernel_url=None, pickable: bool = True, shown: set | None = None,
                idea_stats: list | None = None) -> str:
    """`kernel_url(code)` links nodes (None on shared pages: plain text)."""
    out: list[str] = []
    best = tree["best_path"]
    # One reverse() for the whole tree, not one per node.
    url_pattern = kernel_url("00000000-0000-0000-0000-000000000000") if kernel_url else None
    url_head, _, url_tail = (url_pattern or "").partition("00000000-0000-0000-0000-000000000000")
    rates = {s["idea"]["id"]: s for s in idea_stats} if idea_stats else {}

    def kernel_node(k):
        # Compact on purpose: 2,000 of these make one page. Empty parts are left out; the
        # live script creates them when an update needs them.
        classes = f"k s-{k['status']}" + (" best" if k["id"] in best["kernels"] else "") + (
            " q" if k["quarantined"] else "")
        flags = (" data-q" if k["quarantined"] else "") + (
            " data-ok" if k["approved_by_id"] is not None and k["verified"] else "") + (
            " hidden" if shown is not None and ("k", k["id"]) not in shown else "")
        mark, label = MARKS.get(k["status"], ("?", k["status"]))
        name = escape(kernel_label(k))
        link = f'<a href="{url_head}{k["code"]}{url_tail}">{name}</a>' if kernel_url else f'<span class="n">{name}</span>'
        ms = "" if k["median_ms"] is None else k["median_ms"]
        # The speedups let the live script redraw the "Best:" line when a faster kernel lands.
        speeds = "" if k["speedup_vs_eager"] is None and k["speedup_vs_compile"] is None else (
            f' data-se="{_or_empty(k["speedup_vs_eager"])}" data-sc="{_or_empty(k["speedup_vs_compile"])}"'
            f' data-eb="{_or_empty(k.get("eager_ms"))}" data-b="{k.get("baseline", "")}"')
        out.append(
            f'<li class="{classes}" id="k-{k["id"]}" data-p="{k["parent_id"] or ""}" data-i="{k["idea_id"] or ""}" '
            f'data-r="{k["round"]}" data-s="{k["status"]}" data-ms="{ms}"{speeds}{flags}>'
            f'<div class="row"><i class="m">{mark}</i>{link}<small>R{k["round"]} · {label}</small>'
        )
        if k["median_ms"] is not None:
            out.append(f'<span class="t">{_timing(k)}</span>')
        if k["quarantined"]:
            out.append(f'<span class="qm">{QUARANTINE_MARK[0]} quarantined</span>')
        if k["verified"]:
            out.append('<span class="vb">verified rerun</span>')
        if pickable:
            out.append(f'<input type="checkbox" class="pick" name="k" value="{k["code"]}" aria-label="compare">')
        out.append("</div>")
        ideas, repairs = tree["ideas_of_kernel"].get(k["id"], ()), tree["repairs_of_kernel"].get(k["id"], ())
        if ideas or repairs:
            out.append("<ul>")
            for idea in ideas:
                idea_node(idea)
            for child in repairs:
                kernel_node(child)
            out.append("</ul>")
        out.append("</li>")

    def idea_node(idea):
        classes = "i" + (" best" if idea["id"] in best["ideas"] else "")
        hidden = " hidden" if shown is not None and ("i", idea["id"]) not in shown else ""
        out.append(
            f'<li class="{classes}" id="i-{idea["id"]}" data-r="{idea["round"]}"{hidden}>'
            f'<div class="row idea"><i class="m">◇</i><span class="title">{escape(idea["title"])}</span>'
            f'<small>R{idea["round"]} · {escape(idea["origin"])}</small>'
            f'<span class="rate">{_rate(rates.get(idea["id"]))}</span></div><ul>'
        )
        for k in tree["kernels_of_idea"].get(idea["id"], []):
            kernel_node(k)
        out.append("</ul></li>")

    out.append('<ul class="tree" id="tree-root">')
    for root in tree["roots"]:
        kernel_node(root)
    for idea in tree["root_ideas"]:
        idea_node(idea)
    out.append("</ul>")
    return "".join(out)


def _or_empty(value) -> str:
    return "" if value is None else repr(float(value))


def _rate(stat: dict | None) -> str:
    if not stat or not stat["evaluated"]:
        return ""
    return f'{stat["correct"]}/{stat["evaluated"]} correct'


def _timing(k: dict) -> str:
    parts = [f'{k["median_ms"]:.4g} ms']
    if k["speedup_vs_eager"] is not None:
        parts.append(f'{k["speedup_vs_eager"]:.2f}× {k.get("baseline") or "eager"}')
    if k["speedup_vs_compile"] is not None:
        parts.append(f'{k["speedup_vs_compile"]:.2f}× compile')
    if k.get("sol") is not None:
        parts.append(f'{k["sol"]:.0%} SOL')
    return " · ".join(parts)


# --- one render per change, shared by every viewer -------------------------------------------

TREE_CACHE_SECONDS = 3600  # a bound on memory, not on staleness: a change changes the key


def cached_for_search(search, part: str, build):
    """`build()` once per change of `search`, then from Django's cache. Every change to a search's
    tree publishes an event (live.events.publish bumps `last_event_seq` in the same transaction),
    so a key on (search, last_event_seq) changes exactly when the tree does. The search's code, a
    random UUID, keeps the key apart from another database's search of the same id. A cache that
    fails (Redis down) costs the render, never the page."""
    key = "search-page:" + hashlib.sha256(f"{search.code}:{search.last_event_seq}:{part}".encode()).hexdigest()
    hit = _cache_get(key)
    if hit is not None:
        return hit
    # Django runs each request's view on its own thread: without this, a crowd arriving after an
    # event would all miss together and render the same tree side by side.
    with _BUILD_LOCKS[int(key[-8:], 16) % len(_BUILD_LOCKS)]:
        hit = _cache_get(key)  # built by the thread we waited for
        if hit is not None:
            return hit
        value = build()
        try:
            cache.set(key, value, TREE_CACHE_SECONDS)
        except Exception as exc:
            log.warning("search page cache unavailable (%s: %s)", type(exc).__name__, exc)
        return value


_BUILD_LOCKS = [threading.Lock() for _ in range(64)]  # a fixed pool: no per-key state to clean up


def _cache_get(key):
    try:
        return cache.get(key)
    except Exception as exc:
        log.warning("search page cache unavailable (%s: %s); rendering", type(exc).__name__, exc)
        return None
