"""The server-drawn charts: outliers do not hide the timing body, empty rounds draw no line."""

import re

from lib.plots import idea_outcomes_chart, speedup_chart, speedup_over_time_chart, timing_chart


def bars(svg: str, kind: str = "bar") -> list[float]:
    return [float(h) for h in re.findall(rf'<rect class="{kind}" x="[^"]+" y="[^"]+" width="[^"]+" height="([^"]+)"',
                                         svg)]


def body_samples() -> list[float]:
    return [0.30 + 0.001 * (i % 10) for i in range(49)]  # ten distinct times, 0.300 to 0.309 ms


def test_one_slow_run_is_counted_apart_and_the_body_keeps_its_shape():
    timing = {"samples_ms": body_samples() + [4.19], "median_ms": 0.3045, "ci95_ms": [0.303, 0.306]}
    svg = timing_chart(timing)
    assert len(bars(svg)) == 10  # the body spreads over its bins instead of one squeezed bar
    outlier = re.findall(r'<rect class="bar outlier"[^>]*><title>([^<]+)</title>', svg)
    assert outlier == ["1 outlier(s), out to 4.19 ms"]
    assert '<text class="outlier-count"' in svg and ">1</text>" in svg
    assert "0.309 ms</text>" in svg and ">4.19</text>" in svg  # the body's end, then the far outlier
    assert "1 outlier beyond Q3 + 3×IQR" in svg and "<figcaption" in svg and "50 timed runs" in svg


def test_the_same_samples_without_the_stall_have_no_outlier_bar():
    svg = timing_chart({"samples_ms": body_samples(), "median_ms": 0.3045})
    assert len(bars(svg)) == 10 and 'class="bar outlier"' not in svg
    assert "no outlier beyond Q3 + 3×IQR" in svg


def test_fast_outliers_get_their_own_bar_on_the_left():
    svg = timing_chart({"samples_ms": body_samples() + [0.01, 0.02]})
    heights = re.findall(r'<rect class="bar outlier" x="([^"]+)"', svg)
    assert len(heights) == 1 and float(heights[0]) < 20  # at the left edge
    assert "2 outliers" in svg and ">0.01</text>" in svg


def test_speedup_lines_break_at_empty_rounds():
    series = [{"round": 0, "eager": 1.0, "compile": 0.8, "ranked": 1},
              {"round": 1, "eager": 1.5, "compile": 1.2, "ranked": 3},
              {"round": 2, "eager": 1.5, "compile": 1.2, "ranked": 0},
              {"round": 3, "eager": 2.0, "compile": 1.6, "ranked": 2},
              {"round": 4, "eager": 2.0, "compile": 1.6, "ranked": 0}]
    svg = speedup_chart(series)
    lines = re.findall(r'<polyline class="line-eager" points="([^"]+)"', svg)
    assert len(lines) == 1 and len(lines[0].split()) == 2  # R0-R1; R3 stands alone; nothing across R2 or to R4
    assert len(re.findall(r'<circle class="dot-eager"', svg)) == 3
    assert len(re.findall(r'<text class="empty-round"', svg)) == 2
    every_round = speedup_chart([{**p, "ranked": 1} for p in series])
    assert len(re.findall(r'<polyline class="line-eager" points="([^"]+)"', every_round)[0].split()) == 5


def polyline(svg: str, key: str) -> list[tuple[float, float]]:
    found = re.search(rf'<polyline class="line-{key}" points="([^"]+)"', svg)
    return [tuple(map(float, p.split(","))) for p in found.group(1).split()] if found else []


def test_the_best_speedup_over_time_steps_up_only_when_a_faster_kernel_lands():
    points = [{"t": 0, "eager": 1.5, "compile": 1.2}, {"t": 30, "eager": 0.9, "compile": 0.7},
              {"t": 60, "eager": 3.0, "compile": None}, {"t": 90, "eager": 2.0, "compile": 1.6}]
    svg = speedup_over_time_chart(points)
    eager = polyline(svg, "eager")
    # Start, then one vertical step at t=60 (the slower kernels at 30 and 90 change nothing), then on to the end.
    assert len(eager) == 4 and eager[1][0] == eager[2][0] and eager[2][1] < eager[1][1]
    assert eager[0][1] == eager[1][1] and eager[3][1] == eager[2][1]
    compile_ = polyline(svg, "compile")
    assert len(compile_) == 4  # 1.2 at 0, up to 1.6 at 90, then flat to the end
    assert svg.count('class="dot-eager kernel-dot"') == 4
    assert ">0 s</text>" in svg and ">80 s</text>" in svg and "90 s" not in svg  # round ticks


def test_a_long_search_reads_its_time_in_minutes_and_nothing_ranked_draws_nothing():
    assert "min</text>" in speedup_over_time_chart([{"t": 0, "eager": 1.0}, {"t": 600, "eager": 2.0}])
    assert speedup_over_time_chart([]) == ""
    assert speedup_over_time_chart([{"t": 3, "eager": None, "compile": None}]) == ""


def test_idea_bars_split_into_outcomes_on_one_scale_and_titles_are_escaped():
    rows = [{"title": "<b>Tile</b> it", "correct": 2, "failed": 1, "waiting": 1, "best": 2.5},
            {"title": "x" * 40, "correct": 0, "failed": 2, "waiting": 0, "best": None}]
    svg = idea_outcomes_chart(rows)
    widths = {k: [float(w) for w in re.findall(rf'class="seg-{k}" x="[^"]+" y="[^"]+" width="([^"]+)"', svg)]
              for k in ("correct", "failed", "waiting")}
    assert widths["correct"] == [2 * widths["waiting"][0]] and len(widths["failed"]) == 2
    assert widths["failed"][1] == 2 * widths["failed"][0]  # the same scale for every idea
    assert "<b>" not in svg and "&lt;b&gt;Tile&lt;/b&gt; it" in svg
    assert "x" * 24 + "…<" in svg and "2.50×" in svg
    assert idea_outcomes_chart([]) == ""


def test_the_candidates_axis_places_kernels_by_their_number_and_labels_plain_counts():
    points = [{"t": 5, "n": 1, "eager": 1.0}, {"t": 400, "n": 10, "eager": 2.0}]
    svg = speedup_over_time_chart(points, by="n")
    dots = [float(x) for x in re.findall(r'kernel-dot" cx="([\d.]+)"', svg)]
    assert dots[0] < dots[1] and "over candidates" in svg
    assert ">10</text>" in svg and " s</text>" not in svg and "min</text>" not in svg
