"""The side-by-side diff's work is bounded: oversized sources are refused before any matching,
and the matcher is charged for each comparison and refused past its budget."""

import difflib

import pytest

from lib.diff_table import MAX_BYTES, MAX_WORK, BoundedMatcher, TooCostly, diff_rows, opcodes, refused, render_diff

KERNEL = "\n".join(f"    out[{i}] = x[{i}] * {i}  # step {i}" for i in range(300))


def apply(codes, a, b):
    """b rebuilt from a and the opcodes: a diff that says the truth."""
    out = []
    for tag, i1, i2, j1, j2 in codes:
        out += a[i1:i2] if tag == "equal" else b[j1:j2]
    return out


def test_two_200_kb_sources_are_refused_before_any_matching():
    left, right = "# a comment\n" * 17_000, "# another comment\n" * 11_500  # ~200 KB each
    assert len(left) > MAX_BYTES and len(right) > MAX_BYTES
    rows = diff_rows(left, right)
    assert len(rows) == 1 and "204,000 characters" in refused(rows)
    assert "Too large to diff here" in render_diff(rows, left_title="a", right_title="b")


def test_many_lines_under_the_caps_are_refused_by_line_count():
    rows = diff_rows("\f" * 20_000, "x")  # splitlines breaks at form feeds too
    assert "20,000 lines" in refused(rows)


def test_identical_sources_match_without_the_matcher():
    a = ["# same"] * 2_500
    assert opcodes(a, list(a), budget=0) == [("equal", 0, 2_500, 0, 2_500)]


def test_an_ordinary_edit_diffs_exactly_as_difflib_does():
    a = KERNEL.splitlines()
    b = a[:40] + ["    fused = True"] + a[40:120] + a[125:] + ["    return out"]
    b[200] = "    out[0] = 0"
    exact = difflib.SequenceMatcher(None, a, b, autojunk=False).get_opcodes()
    assert opcodes(a, b, budget=20_000) == exact  # well inside the budget
    assert refused(diff_rows("\n".join(a), "\n".join(b))) is None


def test_many_identical_lines_are_charged_and_fall_back_to_dropping_popular_lines():
    a, b = ["#"] * 2_000 + ["end"], ["start"] + ["#"] * 2_000  # exact matching: ~4 million comparisons
    with pytest.raises(TooCostly):
        BoundedMatcher(a, b, autojunk=False, budget=MAX_WORK).get_opcodes()
    assert apply(opcodes(a, b), a, b) == b


def test_sources_that_differ_everywhere_are_refused_within_the_budget():
    a = [f"line {i}" for i in range(2_900)]
    b = a[::2]  # every other line gone: one match per search, quadratic for an exact matcher
    with pytest.raises(TooCostly):
        opcodes(a, b)
    rows = diff_rows("\n".join(a), "\n".join(b))
    assert refused(rows) == "the sources differ in too many places to match line by line here"


def test_render_gives_a_side_by_side_and_a_unified_table_escaped():
    a = "x = 1\ny = 2\nz = 3\n"
    b = "x = 1\ny = '<b>'\nw = 4\nz = 3\n"
    html = render_diff(diff_rows(a, b), left_title="old <k>", right_title="new")
    split, unified = html.split('<table class="diff unified">')
    assert split.startswith('<table class="diff split">') and "<b>" not in html and "&lt;b&gt;" in html
    # Unified: the changed run's removed line first, then its added lines, each with its own number.
    rows = unified.split("<tr ")[1:]
    kinds = [row.split('"')[1] for row in rows]
    assert kinds == ["same", "del", "add", "add", "same"]
    assert '<td class="ln">2</td><td class="ln"></td><td class="code del">y = 2</td>' in unified
    assert '<td class="ln"></td><td class="ln">3</td><td class="code add">w = 4</td>' in unified
    assert "− old &lt;k&gt;<br>+ new" in unified
