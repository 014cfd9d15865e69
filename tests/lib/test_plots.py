"""The server-drawn charts: outliers do not hide the timing body, empty rounds draw no line."""

import re

from lib.plots import speedup_chart, timing_chart


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
