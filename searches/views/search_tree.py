"""The search tree as HTML, built in one pass over plain dicts (each kernel's `kernel_view`): a nested list of
kernel nodes joined by idea nodes. Built here rather than by template recursion so a 2,000-kernel search
renders in milliseconds. Every piece of text goes through `escape`. A crowd on one page shares one
render per change (`cached_for_search`)."""

import hashlib
import json
import logging
import threading
from html import escape

from django.core.cache import cache

from ..models import Kernel, Verdict
from ..selectors import TREE_EXTRAS

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
    """`kernel_url(code)` links nodes (None on shared pages: plain text). After the tree, the empty kernel row
    in a <template> (`kernel_row_template`): the live script fills a copy of it for each new kernel."""
    out: list[str] = []
    best = tree["best_path"]
    # One reverse() for the whole tree, not one per node.
    url_pattern = kernel_url(ZERO) if kernel_url else None
    link = url_pattern.partition(ZERO)[::2] if url_pattern else None
    rates = {s["idea"]["id"]: s for s in idea_stats} if idea_stats else {}

    def kernel_node(k):
        hidden = shown is not None and ("k", k["id"]) not in shown
        out.append(kernel_row(k, link=link, pickable=pickable, best=k["id"] in best["kernels"], hidden=hidden))
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
    out.append(kernel_row_template(link=link, pickable=pickable))
    return "".join(out)


ZERO = "00000000-0000-0000-0000-000000000000"
_JSON = json.JSONEncoder(separators=(",", ":"))


def kernel_row(k: dict, *, link: tuple[str, str] | None, pickable: bool, best: bool = False, hidden: bool = False,
               every_part: bool = False) -> str:
    """One kernel's node, its <li> left open for its children: the one markup of a kernel in the tree.
    `data-k` is the kernel's view (selectors/kernel_view.py) with its baseline, as its live events carry it:
    the script reads and updates it there, so a field added to the view reaches the row. `link`: the
    kernel URL's text around the code (None: plain text). Compact on purpose: 2,000 of these make one page,
    so empty parts are left out unless `every_part` (the template the script fills)."""
    classes = f"k s-{k['status']}" + (" best" if best else "") + (" q" if k["quarantined"] else "")
    view = {key: value for key, value in k.items() if key not in TREE_EXTRAS}
    mark, label = MARKS.get(k["status"], ("?", k["status"]))
    name = escape(kernel_label(k)) if k["code"] else ""
    anchor = f'<a href="{link[0]}{k["code"]}{link[1]}">{name}</a>' if link else f'<span class="n">{name}</span>'
    data = f" data-k='{_single_quoted(_JSON.encode(view))}'" if k["code"] else ""
    out = [f'<li class="{classes}" id="k-{k["id"]}"{data}{" hidden" if hidden else ""}>'
           f'<div class="row"><i class="m">{mark}</i>{anchor}'
           f'<small>R{k["round"]} · {label}</small>']
    if k["median_ms"] is not None or every_part:
        out.append(f'<span class="t">{_timing(k)}</span>')
    if k["quarantined"] or every_part:
        out.append(f'<span class="qm">{QUARANTINE_MARK[0] + " quarantined" if k["quarantined"] else ""}</span>')
    if k["verified"] or every_part:
        out.append(f'<span class="vb">{"verified rerun" if k["verified"] else ""}</span>')
    if pickable:
        out.append(f'<input type="checkbox" class="pick" name="k" value="{k["code"]}" aria-label="compare">')
    out.append("</div>")
    return "".join(out)


def kernel_row_template(*, link: tuple[str, str] | None, pickable: bool) -> str:
    """An empty kernel row, every part present, inside a <template> (inert): the live script copies it for a
    kernel the page has not drawn, and copies a missing part from it, then fills both as it updates a row."""
    blank = {"id": "", "code": "", "name": "", "round": "", "status": "", "quarantined": False, "verified": False,
             "median_ms": None}
    row = kernel_row(blank, link=link, pickable=pickable, every_part=True)
    return f'<template id="kernel-row">{row}</li></template>'


def _single_quoted(text: str) -> str:
    """`text` for an attribute in single quotes: JSON is full of double quotes, six bytes each escaped."""
    return escape(text, quote=False).replace("'", "&#x27;")


def _rate(stat: dict | None) -> str:
    if not stat or not stat["evaluated"]:
        return ""
    return f'{stat["correct"]}/{stat["evaluated"]} correct'


def _timing(k: dict) -> str:
    if k["median_ms"] is None:
        return ""
    parts = [f'{k["median_ms"]:.4g} ms']
    if k["speedup_vs_eager"] is not None:
        parts.append(f'{k["speedup_vs_eager"]:.2f}× {k.get("baseline") or "eager"}')
    if k["speedup_vs_compile"] is not None:
        parts.append(f'{k["speedup_vs_compile"]:.2f}× compile')
    if k.get("speed_of_light") is not None:
        parts.append(f'{k["speed_of_light"]:.0%} SOL')
    return " · ".join(parts)


# --- one render per change, shared by every viewer -------------------------------------------

TREE_CACHE_SECONDS = 3600  # a bound on memory, not on staleness: a change changes the key


def cached_for_search(search, seq: int, part: str, build):
    """`build()` once per change of `search`, then from Django's cache. Every change to a search's
    tree publishes an event (live.events.publish bumps the stream's number in the same transaction),
    so a key on (search, `seq`: its last number, read before building) changes exactly when the tree does. The search's code, a
    random UUID, keeps the key apart from another database's search of the same id. A cache that
    fails (Redis down) costs the render, never the page."""
    key = "search-page:2:" + hashlib.sha256(f"{search.code}:{seq}:{part}".encode()).hexdigest()
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
