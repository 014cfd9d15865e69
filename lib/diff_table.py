"""Diff of two sources as table rows, computed on the server with difflib, rendered side by side
(both sides share each row, so they scroll together) and unified; long unchanged runs fold to a note.

Kernel sources are anyone's text and the diff runs in the web process, so its work is bounded:
sources past a size or line cap are refused before any matching, and the matcher is charged for
every line it compares (difflib is quadratic on many identical lines) and refused past a budget.
A refused diff is one row of kind "refused" that says why; callers offer the sources instead.
"""

import difflib
from html import escape

CONTEXT = 3
MAX_BYTES = 100_000  # characters per side: half of what a kernel may hold (KERNEL_SOURCE_MAX_BYTES)
MAX_LINES = 3_000  # per side
MAX_WORK = 250_000  # line comparisons per matching pass; a real kernel edit takes under 20,000


class TooCostly(Exception):
    """The matcher ran out of its work budget."""


class BoundedMatcher(difflib.SequenceMatcher):
    """A SequenceMatcher charged, before each search for a longest match, for the comparisons that
    search can make (every position in b of every line of a's range), refused past its budget."""

    def __init__(self, a, b, *, autojunk: bool, budget: int):
        self.budget = budget
        super().__init__(None, a, b, autojunk=autojunk)

    def find_longest_match(self, alo=0, ahi=None, blo=0, bhi=None):
        ahi = len(self.a) if ahi is None else ahi
        self.budget -= ahi - alo
        self.budget -= sum(len(self.b2j.get(line, ())) for line in self.a[alo:ahi])
        if self.budget < 0:
            raise TooCostly
        return super().find_longest_match(alo, ahi, blo, bhi)


def too_large(left: str, right: str) -> str | None:
    """Why the two sources are not diffed here, or None when they are small enough."""
    for side, text in (("first", left), ("second", right)):
        if len(text) > MAX_BYTES:
            return f"the {side} source is {len(text):,} characters (the diff here stops at {MAX_BYTES:,})"
        lines = len(text.splitlines())  # splitlines' count: it also breaks at \r, \f and others
        if lines > MAX_LINES:
            return f"the {side} source has {lines:,} lines (the diff here stops at {MAX_LINES:,})"
    return None


def opcodes(a: list[str], b: list[str], *, budget: int = MAX_WORK) -> list[tuple]:
    """difflib's opcodes within the work budget: the common head and tail are matched first (an
    unchanged file costs nothing), then the middle, exactly and, if that costs too much, with
    difflib's popular-line heuristic; TooCostly when both run out."""
    head = 0
    while head < min(len(a), len(b)) and a[head] == b[head]:
        head += 1
    tail = 0
    while tail < min(len(a), len(b)) - head and a[-1 - tail] == b[-1 - tail]:
        tail += 1
    middle_a, middle_b = a[head:len(a) - tail], b[head:len(b) - tail]
    middle = []
    if middle_a or middle_b:
        middle = _middle(middle_a, middle_b, budget)
    codes = [("equal", 0, head, 0, head)] if head else []
    codes += [(tag, i1 + head, i2 + head, j1 + head, j2 + head) for tag, i1, i2, j1, j2 in middle]
    if tail:
        codes.append(("equal", len(a) - tail, len(a), len(b) - tail, len(b)))
    return codes


def _middle(a: list[str], b: list[str], budget: int) -> list[tuple]:
    try:
        return BoundedMatcher(a, b, autojunk=False, budget=budget).get_opcodes()
    except TooCostly:
        matcher = BoundedMatcher(a, b, autojunk=True, budget=budget)
        if not matcher.bpopular:
            raise  # no line common enough to drop: the second pass would cost the same
        return matcher.get_opcodes()


def refused(rows: list[dict]) -> str | None:
    """The reason a diff was refused, or None for a diff."""
    return rows[0]["reason"] if len(rows) == 1 and rows[0]["kind"] == "refused" else None


def diff_rows(left: str, right: str, *, context: int = CONTEXT) -> list[dict]:
    """Rows of {kind: same|del|add|chg|fold, ln, l, rn, r}; line texts are escaped later by the template.
    Sources too large or too costly to diff give one row {kind: refused, reason}."""
    reason = too_large(left, right)
    if reason:
        return [{"kind": "refused", "reason": reason}]
    a, b = left.splitlines(), right.splitlines()
    try:
        codes = opcodes(a, b)
    except TooCostly:
        return [{"kind": "refused", "reason": "the sources differ in too many places to match line by line here"}]
    rows = []
    for tag, i1, i2, j1, j2 in codes:
        if tag == "equal":
            n = i2 - i1
            if n > 2 * context + 1 and context >= 0:
                keep_head = context if i1 > 0 else 0
                keep_tail = context if i2 < len(a) else 0
                for k in range(keep_head):
                    rows.append(_row("same", i1 + k, a[i1 + k], j1 + k, b[j1 + k]))
                folded = n - keep_head - keep_tail
                if folded > 0:
                    rows.append({"kind": "fold", "count": folded})
                for k in range(n - keep_tail, n):
                    rows.append(_row("same", i1 + k, a[i1 + k], j1 + k, b[j1 + k]))
            else:
                for k in range(n):
                    rows.append(_row("same", i1 + k, a[i1 + k], j1 + k, b[j1 + k]))
        else:
            left_lines, right_lines = a[i1:i2], b[j1:j2]
            for k in range(max(len(left_lines), len(right_lines))):
                li = i1 + k if k < len(left_lines) else None
                ri = j1 + k if k < len(right_lines) else None
                kind = "chg" if li is not None and ri is not None else ("del" if li is not None else "add")
                rows.append(_row(kind, li, a[li] if li is not None else "", ri, b[ri] if ri is not None else ""))
    return rows


def _row(kind, li, ltext, ri, rtext):
    return {"kind": kind, "ln": None if li is None else li + 1, "l": ltext,
            "rn": None if ri is None else ri + 1, "r": rtext}


def diff_stats(rows: list[dict]) -> dict:
    added = sum(1 for r in rows if r["kind"] in ("add", "chg") and r["rn"])
    removed = sum(1 for r in rows if r["kind"] in ("del", "chg") and r["ln"])
    return {"added": added, "removed": removed}


def render_diff(rows: list[dict], *, left_title: str, right_title: str) -> str:
    """The diff as HTML twice (built directly: large diffs render fast; all text escaped): side by
    side, and unified for narrow screens, where two code columns leave a few characters each. The
    stylesheet shows one of the two by the screen's width."""
    if refused(rows):
        return (f'<table class="diff"><tbody><tr class="fold refused"><td>Too large to diff here '
                f'({escape(rows[0]["reason"])}): download both and diff them locally.</td></tr></tbody></table>')
    return _render_split(rows, left_title, right_title) + _render_unified(rows, left_title, right_title)


def _render_split(rows: list[dict], left_title: str, right_title: str) -> str:
    out = ['<table class="diff split"><colgroup><col class="ln"><col><col class="ln"><col></colgroup>'
           '<thead><tr><th colspan="2">', escape(left_title), '</th><th colspan="2">',
           escape(right_title), "</th></tr></thead><tbody>"]
    for row in rows:
        if row["kind"] == "fold":
            out.append(f'<tr class="fold"><td colspan="4">… {row["count"]} unchanged lines …</td></tr>')
            continue
        kind = row["kind"]
        lcls = "del" if kind in ("del", "chg") else ("none" if row["ln"] is None else "")
        rcls = "add" if kind in ("add", "chg") else ("none" if row["rn"] is None else "")
        out.append(
            f'<tr class="{kind}"><td class="ln">{row["ln"] or ""}</td><td class="code {lcls}">{escape(row["l"])}</td>'
            f'<td class="ln">{row["rn"] or ""}</td><td class="code {rcls}">{escape(row["r"])}</td></tr>'
        )
    out.append("</tbody></table>")
    return "".join(out)


def _render_unified(rows: list[dict], left_title: str, right_title: str) -> str:
    """One code column: a changed run's removed lines, then its added lines, as `diff -u` shows them."""
    out = ['<table class="diff unified"><colgroup><col class="ln"><col class="ln"><col></colgroup>'
           '<thead><tr><th colspan="3">− ', escape(left_title), "<br>+ ", escape(right_title),
           "</th></tr></thead><tbody>"]
    removed, added = [], []

    def flush():
        for ln, text in removed:
            out.append(f'<tr class="del"><td class="ln">{ln}</td><td class="ln"></td>'
                       f'<td class="code del">{escape(text)}</td></tr>')
        for rn, text in added:
            out.append(f'<tr class="add"><td class="ln"></td><td class="ln">{rn}</td>'
                       f'<td class="code add">{escape(text)}</td></tr>')
        removed.clear()
        added.clear()

    for row in rows:
        if row["kind"] in ("del", "add", "chg"):
            if row["ln"] is not None:
                removed.append((row["ln"], row["l"]))
            if row["rn"] is not None:
                added.append((row["rn"], row["r"]))
            continue
        flush()
        if row["kind"] == "fold":
            out.append(f'<tr class="fold"><td colspan="3">… {row["count"]} unchanged lines …</td></tr>')
        else:
            out.append(f'<tr class="same"><td class="ln">{row["ln"]}</td><td class="ln">{row["rn"]}</td>'
                       f'<td class="code">{escape(row["l"])}</td></tr>')
    flush()
    out.append("</tbody></table>")
    return "".join(out)
