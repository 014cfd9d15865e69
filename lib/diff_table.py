"""Side-by-side diff of two sources as table rows, computed on the server with difflib.
Both sides share each row, so they scroll together; long unchanged runs fold to a note."""

import difflib
from html import escape

CONTEXT = 3


def diff_rows(left: str, right: str, *, context: int = CONTEXT) -> list[dict]:
    """Rows of {kind: same|del|add|chg|fold, ln, l, rn, r}; line texts are escaped later by the template."""
    a, b = left.splitlines(), right.splitlines()
    rows = []
    for tag, i1, i2, j1, j2 in difflib.SequenceMatcher(None, a, b, autojunk=False).get_opcodes():
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
    """The table as HTML (built directly: large diffs render fast); all text escaped."""
    out = ['<table class="diff"><colgroup><col class="ln"><col><col class="ln"><col></colgroup>'
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
