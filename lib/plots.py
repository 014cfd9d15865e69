"""Small charts drawn as inline SVG on the server: no script, no library, and inert
(only numbers we format ourselves go into the markup)."""

import math
from html import escape


def speedup_chart(series: list[dict], *, width: int = 520, height: int = 200) -> str:
    """Best speedup vs eager and vs torch.compile found up to each round. A round with no ranked
    kernel (`ranked` 0) breaks the lines instead of carrying the best across it flat, which would
    read as a round that ran and found nothing better; its label is dimmed."""
    points = [(s["round"], s["eager"], s["compile"], s.get("ranked", 1)) for s in series]
    values = [v for _, e, c, _ in points for v in (e, c) if v is not None]
    if not values:
        return ""
    left, right, top, bottom = 44, 12, 12, 28
    x_max = max(1, max(p[0] for p in points))
    y_max = max(1.2, max(values) * 1.1)

    def x(r):
        return left + (width - left - right) * r / x_max

    def y(v):
        return top + (height - top - bottom) * (1 - v / y_max)

    parts = [f'<svg class="chart" viewBox="0 0 {width} {height}" width="{width}" height="{height}" role="img" '
             f'aria-label="Best speedup by round">']
    for tick in _ticks(y_max):
        parts.append(f'<line x1="{left}" x2="{width - right}" y1="{y(tick):.1f}" y2="{y(tick):.1f}" class="grid"/>'
                     f'<text x="{left - 6}" y="{y(tick) + 4:.1f}" text-anchor="end">{tick:g}×</text>')
    parts.append(f'<line x1="{left}" x2="{width - right}" y1="{y(1):.1f}" y2="{y(1):.1f}" class="parity"/>')
    for r, _, _, ranked in points:
        empty = ' class="empty-round"' if not ranked else ""
        parts.append(f'<text{empty} x="{x(r):.1f}" y="{height - 8}" text-anchor="middle">R{r}</text>')
    for key, index in (("eager", 1), ("compile", 2)):
        segments, current = [], []
        for p in points:
            if p[3] and p[index] is not None:
                current.append((x(p[0]), y(p[index])))
            elif current:
                segments.append(current)
                current = []
        segments += [current] if current else []
        for coords in segments:
            if len(coords) > 1:
                path = " ".join(f"{cx:.1f},{cy:.1f}" for cx, cy in coords)
                parts.append(f'<polyline class="line-{key}" points="{path}"/>')
            parts.extend(f'<circle class="dot-{key}" cx="{cx:.1f}" cy="{cy:.1f}" r="3"/>' for cx, cy in coords)
    parts.append("</svg>")
    return "".join(parts)


def _quantile(ordered: list[float], q: float) -> float:
    pos = (len(ordered) - 1) * q
    i = int(pos)
    return ordered[i] + (ordered[min(i + 1, len(ordered) - 1)] - ordered[i]) * (pos - i)


def timing_chart(timing: dict | None, *, width: int = 420, height: int = 132, bins: int = 24) -> str:
    """Histogram of the timed samples, with the median and the 95% interval marked, and a caption.

    The bins span the body only: samples beyond the Tukey fences (Q1 - 3 IQR, Q3 + 3 IQR) are
    drawn as a separate, marked bar on their side with their count, so one 4 ms stall among
    0.3 ms runs cannot squeeze every other run into one bar."""
    samples = sorted(s for s in (timing or {}).get("samples_ms") or []
                     if isinstance(s, (int, float)) and math.isfinite(s))
    if len(samples) < 2:
        return ""
    q1, q3 = _quantile(samples, 0.25), _quantile(samples, 0.75)
    low_fence, high_fence = q1 - 3 * (q3 - q1), q3 + 3 * (q3 - q1)
    body = [s for s in samples if low_fence <= s <= high_fence]
    low_out = [s for s in samples if s < low_fence]
    high_out = [s for s in samples if s > high_fence]
    lo, hi = body[0], body[-1]
    span = (hi - lo) or max(abs(hi) * 0.01, 1e-9)
    counts = [0] * bins
    for s in body:
        counts[min(bins - 1, int((s - lo) / span * bins))] += 1
    left, right, top, bottom = 8, 8, 18, 22
    side = 34  # room for an outlier bar, with a gap that says "the axis breaks here"
    body_left = left + (side if low_out else 0)
    body_w = width - body_left - right - (side if high_out else 0)
    plot_h = height - top - bottom
    bar_w = body_w / bins
    peak = max(counts + [len(low_out), len(high_out)])

    def x(v):
        return body_left + body_w * (v - lo) / span

    parts = [f'<svg class="chart timing" viewBox="0 0 {width} {height}" width="{width}" height="{height}" role="img" '
             f'aria-label="Distribution of {len(samples)} timed runs, {len(low_out) + len(high_out)} outliers">']
    ci = timing.get("ci95_ms")
    if isinstance(ci, (list, tuple)) and len(ci) == 2 and all(isinstance(v, (int, float)) for v in ci):
        x0, x1 = max(body_left, x(ci[0])), min(body_left + body_w, x(ci[1]))
        if x1 >= x0:  # an interval wholly among the outliers is not drawn over the body
            parts.append(f'<rect class="ci" x="{x0:.1f}" y="{top}" width="{max(1.0, x1 - x0):.1f}" height="{plot_h}"/>')
    for i, count in enumerate(counts):
        if count:
            h = plot_h * count / peak
            parts.append(f'<rect class="bar" x="{body_left + i * bar_w:.1f}" y="{top + plot_h - h:.1f}" '
                         f'width="{max(1.0, bar_w - 1):.1f}" height="{h:.1f}"/>')
    for group, bar_x, anchor in ((low_out, left, "start"), (high_out, width - right - side + 10, "end")):
        if group:
            h = max(2.0, plot_h * len(group) / peak)
            far = group[0] if group is low_out else group[-1]
            parts.append(f'<rect class="bar outlier" x="{bar_x:.1f}" y="{top + plot_h - h:.1f}" width="{side - 10}" '
                         f'height="{h:.1f}"><title>{len(group)} outlier(s), out to {escape(f"{far:.4g}")} ms</title></rect>'
                         f'<text class="outlier-count" x="{bar_x + (side - 10) / 2:.1f}" y="{top + plot_h - h - 4:.1f}" '
                         f'text-anchor="middle">{len(group)}</text>'
                         f'<text x="{(bar_x if anchor == "start" else bar_x + side - 10):.1f}" y="{height - 6}" '
                         f'text-anchor="{anchor}">{escape(f"{far:.3g}")}</text>')
    median = timing.get("median_ms")
    if isinstance(median, (int, float)) and lo <= median <= hi:
        parts.append(f'<line class="median" x1="{x(median):.1f}" x2="{x(median):.1f}" y1="{top}" y2="{top + plot_h}"/>')
    parts.append(f'<text x="{body_left}" y="{height - 6}">{escape(f"{lo:.4g}")} ms</text>'
                 f'<text x="{body_left + body_w}" y="{height - 6}" text-anchor="end">{escape(f"{hi:.4g}")} ms</text></svg>')
    outliers = len(low_out) + len(high_out)
    note = (f"; {outliers} outlier{'s' if outliers != 1 else ''} beyond Q3 + 3×IQR (or below Q1 − 3×IQR) in the "
            f"separate red bar{'s' if low_out and high_out else ''}, so the body keeps its shape" if outliers
            else "; no outlier beyond Q3 + 3×IQR")
    caption = (f"How long each of the {len(samples)} timed runs took: red line the median, shaded band its 95% "
               f"interval{note}.")
    return f'<figure class="timing-figure">{"".join(parts)}<figcaption class="chart-note">{escape(caption)}</figcaption></figure>'


def _ticks(y_max: float) -> list[float]:
    step = 0.5 if y_max <= 3 else (1 if y_max <= 6 else max(1, round(y_max / 5)))
    ticks, t = [], step
    while t < y_max:
        ticks.append(round(t, 2))
        t += step
    return ticks


def _time_unit(seconds: float) -> tuple[float, str]:
    if seconds < 120:
        return 1.0, "s"
    if seconds < 7200:
        return 60.0, "min"
    return 3600.0, "h"


def _time_ticks(top: float) -> list[float]:
    """0 and round steps (1, 2 or 5 times a power of ten) up to `top`, at most six of them."""
    step = 10 ** math.floor(math.log10(top / 5)) if top > 0 else 1
    for factor in (1, 2, 5, 10):
        if top / (step * factor) <= 5:
            step *= factor
            break
    return [round(i * step, 10) for i in range(int(top / step + 1e-9) + 1)]


def speedup_over_time_chart(points: list[dict], *, by: str = "t", width: int = 520, height: int = 200) -> str:
    """Each ranked kernel as a dot at the time its verdict landed (`by="t"`, seconds since the
    search started) or at its number among the judged candidates (`by="n"`), at its speedup over
    eager; the best found so far as a step line, vs eager and vs torch.compile. Steps, not slopes:
    between two verdicts nothing better was known."""
    points = [{**p, "t": p[by]} for p in points if p.get(by) is not None]
    points.sort(key=lambda p: p["t"])
    values = [p[k] for p in points for k in ("eager", "compile") if p.get(k) is not None]
    if not values:
        return ""
    left, right, top, bottom = 44, 12, 12, 28
    t_max = max(1.0, points[-1]["t"])
    scale, unit = _time_unit(t_max) if by == "t" else (1.0, "")
    y_max = max(1.2, max(values) * 1.1)

    def x(t):
        return left + (width - left - right) * t / t_max

    def y(v):
        return top + (height - top - bottom) * (1 - v / y_max)

    parts = [f'<svg class="chart over-time" viewBox="0 0 {width} {height}" width="{width}" height="{height}" '
             f'role="img" aria-label="Speedup of each ranked kernel over {"time" if by == "t" else "candidates"}, '
             f'{len(points)} kernels">']
    for tick in _ticks(y_max):
        parts.append(f'<line x1="{left}" x2="{width - right}" y1="{y(tick):.1f}" y2="{y(tick):.1f}" class="grid"/>'
                     f'<text x="{left - 6}" y="{y(tick) + 4:.1f}" text-anchor="end">{tick:g}×</text>')
    parts.append(f'<line x1="{left}" x2="{width - right}" y1="{y(1):.1f}" y2="{y(1):.1f}" class="parity"/>')
    for t in _time_ticks(t_max / scale):
        parts.append(f'<text x="{x(t * scale):.1f}" y="{height - 8}" text-anchor="middle">{t:g}{" " + unit if unit else ""}</text>')
    for key in ("eager", "compile"):
        best, steps = None, []
        for p in points:
            v = p.get(key)
            if v is None or (best is not None and v <= best):
                continue
            if best is not None:
                steps.append((x(p["t"]), y(best)))
            best = v
            steps.append((x(p["t"]), y(v)))
        if steps:
            steps.append((x(t_max), steps[-1][1]))
            path = " ".join(f"{cx:.1f},{cy:.1f}" for cx, cy in steps)
            parts.append(f'<polyline class="line-{key}" points="{path}"/>')
    parts.extend(f'<circle class="dot-eager kernel-dot" cx="{x(p["t"]):.1f}" cy="{y(p["eager"]):.1f}" r="2.5"/>'
                 for p in points if p.get("eager") is not None)
    parts.append("</svg>")
    return "".join(parts)


TITLE_CHARS = 25


def idea_outcomes_chart(rows: list[dict], *, width: int = 520, label_width: int = 190, bar: int = 14) -> str:
    """One bar per idea: its kernels correct (green), failed (red) and still waiting (grey), on
    a shared scale, with the best speedup over eager at the end. Titles are escaped."""
    if not rows:
        return ""
    top, gap, right = 6, 5, 56
    height = top + len(rows) * (bar + gap) + 4
    peak = max(1, max(r["correct"] + r["failed"] + r["waiting"] for r in rows))
    unit = (width - label_width - right) / peak
    parts = [f'<svg class="chart ideas" viewBox="0 0 {width} {height}" width="{width}" height="{height}" role="img" '
             f'aria-label="Outcomes of the kernels of {len(rows)} ideas">']
    for i, row in enumerate(rows):
        y0 = top + i * (bar + gap)
        # what fits the label's room at 11 px (capitals included); the whole title is its tooltip
        title = row["title"] if len(row["title"]) <= TITLE_CHARS else row["title"][:TITLE_CHARS - 1] + "…"
        parts.append(f'<text x="{label_width - 6}" y="{y0 + bar - 3}" text-anchor="end">'
                     f'<title>{escape(row["title"])}</title>{escape(title)}</text>')
        x0 = float(label_width)
        for key in ("correct", "failed", "waiting"):
            if row[key]:
                w = unit * row[key]
                parts.append(f'<rect class="seg-{key}" x="{x0:.1f}" y="{y0}" width="{w:.1f}" height="{bar}">'
                             f'<title>{row[key]} {key}</title></rect>')
                x0 += w
        if row.get("best") is not None:
            parts.append(f'<text class="best-speedup" x="{x0 + 4:.1f}" y="{y0 + bar - 3}">{row["best"]:.2f}×</text>')
    parts.append("</svg>")
    return "".join(parts)


# Runs are told apart by six colour classes (static/css/app.css: a style attribute would break
# the content security policy); only the run's index reaches the markup.
_RUN_CLASSES = 6


def fast_p_curves_chart(series: list[list[tuple[float, float | None]]], *, width: int = 520, height: int = 220) -> str:
    """One line per run: the share of problems correct and faster than p, for p on the x axis
    (KernelBench's fast_p as a curve). `series[i]` is run i's [(p, share)]."""
    points = [(p, v) for curve in series for p, v in curve if v is not None]
    if not points:
        return ""
    left, right, top, bottom = 44, 12, 12, 30
    x_max = max(p for p, _ in points) or 1

    def x(p):
        return left + (width - left - right) * p / x_max

    def y(v):
        return top + (height - top - bottom) * (1 - v)

    parts = [f'<svg class="chart" viewBox="0 0 {width} {height}" width="{width}" height="{height}" role="img" '
             f'aria-label="fast_p against p, one line per run">']
    for tick in (0, 0.25, 0.5, 0.75, 1):
        parts.append(f'<line x1="{left}" x2="{width - right}" y1="{y(tick):.1f}" y2="{y(tick):.1f}" class="grid"/>'
                     f'<text x="{left - 6}" y="{y(tick) + 4:.1f}" text-anchor="end">{tick:.0%}</text>')
    for p in range(int(x_max) + 1):
        parts.append(f'<text x="{x(p):.1f}" y="{height - 14}" text-anchor="middle">{p}</text>')
    parts.append(f'<text x="{(left + width - right) / 2:.0f}" y="{height - 2}" text-anchor="middle">p</text>')
    parts.append(f'<line x1="{x(1):.1f}" x2="{x(1):.1f}" y1="{top}" y2="{height - bottom}" class="parity"/>')
    for i, curve in enumerate(series):
        known = [(p, v) for p, v in curve if v is not None]
        # fast_p only drops where p passes a speedup: drawn as steps, not slopes between samples.
        steps = [known[0]] + [pt for (_, before), (p, v) in zip(known, known[1:]) for pt in ((p, before), (p, v))]
        coords = " ".join(f"{x(p):.1f},{y(v):.1f}" for p, v in steps)
        parts.append(f'<polyline class="run-line run-{i % _RUN_CLASSES}" data-run="{i}" points="{coords}"/>'
                     f'<text class="run-{i % _RUN_CLASSES}" x="{width - right}" y="{top + 12 + 14 * i}" '
                     f'text-anchor="end">run {i + 1}</text>')
    parts.append("</svg>")
    return "".join(parts)


def speedup_distribution_chart(series: list[list[float]], *, width: int = 520, row: int = 28) -> str:
    """Each run's per-problem speedups as dots on a log axis, one row per run, with the median
    marked: how the speedups spread, which fast_p at a few thresholds hides."""
    values = [v for run in series for v in run if v and v > 0]
    if not values:
        return ""
    left, right, top = 60, 12, 10
    height = top + row * len(series) + 26
    low, high = math.log10(min(min(values), 0.5)), math.log10(max(max(values), 2))

    def x(v):
        return left + (width - left - right) * (math.log10(v) - low) / (high - low)

    parts = [f'<svg class="chart" viewBox="0 0 {width} {height}" width="{width}" height="{height}" role="img" '
             f'aria-label="Per-problem speedups, one row per run">']
    for tick in (0.1, 0.25, 0.5, 1, 2, 4, 10, 100):
        if low <= math.log10(tick) <= high:
            parts.append(f'<line x1="{x(tick):.1f}" x2="{x(tick):.1f}" y1="{top}" y2="{height - 22}" '
                         f'class="{"parity" if tick == 1 else "grid"}"/>'
                         f'<text x="{x(tick):.1f}" y="{height - 8}" text-anchor="middle">{tick:g}×</text>')
    for i, run in enumerate(series):
        cy = top + row * i + row / 2
        colour = f"run-{i % _RUN_CLASSES}"
        parts.append(f'<text class="{colour}" x="{left - 6}" y="{cy + 4:.1f}" text-anchor="end">run {i + 1}</text>')
        parts.extend(f'<circle class="kernel-dot {colour}" cx="{x(v):.1f}" cy="{cy:.1f}" r="4"/>'
                     for v in run if v and v > 0)
        ordered = sorted(v for v in run if v and v > 0)
        if ordered:
            mid = x(_quantile(ordered, 0.5))
            parts.append(f'<line class="run-median {colour}" x1="{mid:.1f}" x2="{mid:.1f}" y1="{cy - 9:.1f}" '
                         f'y2="{cy + 9:.1f}"/>')
    parts.append("</svg>")
    return "".join(parts)
