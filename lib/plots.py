"""Small charts drawn as inline SVG on the server: no script, no library, and inert
(only numbers we format ourselves go into the markup)."""

import math
from html import escape


def speedup_chart(series: list[dict], *, width: int = 520, height: int = 200) -> str:
    """Best speedup vs eager and vs torch.compile found up to each round."""
    points = [(s["round"], s["eager"], s["compile"]) for s in series]
    values = [v for _, e, c in points for v in (e, c) if v is not None]
    if not values:
        return ""
    left, right, top, bottom = 44, 12, 12, 28
    x_max = max(1, max(r for r, _, _ in points))
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
    for r, _, _ in points:
        parts.append(f'<text x="{x(r):.1f}" y="{height - 8}" text-anchor="middle">R{r}</text>')
    for key, index in (("eager", 1), ("compile", 2)):
        coords = [(x(p[0]), y(p[index])) for p in points if p[index] is not None]
        if coords:
            path = " ".join(f"{cx:.1f},{cy:.1f}" for cx, cy in coords)
            parts.append(f'<polyline class="line-{key}" points="{path}"/>')
            parts.extend(f'<circle class="dot-{key}" cx="{cx:.1f}" cy="{cy:.1f}" r="3"/>' for cx, cy in coords)
    parts.append("</svg>")
    return "".join(parts)


def timing_chart(timing: dict | None, *, width: int = 420, height: int = 120, bins: int = 24) -> str:
    """Histogram of the timed samples, with the median and the 95% interval marked."""
    samples = [s for s in (timing or {}).get("samples_ms") or [] if isinstance(s, (int, float)) and math.isfinite(s)]
    if len(samples) < 2:
        return ""
    lo, hi = min(samples), max(samples)
    span = (hi - lo) or max(abs(hi) * 0.01, 1e-9)
    counts = [0] * bins
    for s in samples:
        counts[min(bins - 1, int((s - lo) / span * bins))] += 1
    left, right, top, bottom = 8, 8, 8, 22
    plot_w, plot_h = width - left - right, height - top - bottom
    bar_w = plot_w / bins
    peak = max(counts)

    def x(v):
        return left + plot_w * (v - lo) / span

    parts = [f'<svg class="chart timing" viewBox="0 0 {width} {height}" width="{width}" height="{height}" role="img" '
             f'aria-label="Distribution of {len(samples)} timed runs">']
    ci = timing.get("ci95_ms")
    if isinstance(ci, (list, tuple)) and len(ci) == 2 and all(isinstance(v, (int, float)) for v in ci):
        x0, x1 = max(left, x(ci[0])), min(width - right, x(ci[1]))
        parts.append(f'<rect class="ci" x="{x0:.1f}" y="{top}" width="{max(1.0, x1 - x0):.1f}" height="{plot_h}"/>')
    for i, count in enumerate(counts):
        if count:
            h = plot_h * count / peak
            parts.append(f'<rect class="bar" x="{left + i * bar_w:.1f}" y="{top + plot_h - h:.1f}" '
                         f'width="{max(1.0, bar_w - 1):.1f}" height="{h:.1f}"/>')
    median = timing.get("median_ms")
    if isinstance(median, (int, float)):
        parts.append(f'<line class="median" x1="{x(median):.1f}" x2="{x(median):.1f}" y1="{top}" y2="{top + plot_h}"/>')
    parts.append(f'<text x="{left}" y="{height - 6}">{escape(f"{lo:.4g}")} ms</text>'
                 f'<text x="{width - right}" y="{height - 6}" text-anchor="end">{escape(f"{hi:.4g}")} ms</text></svg>')
    return "".join(parts)


def _ticks(y_max: float) -> list[float]:
    step = 0.5 if y_max <= 3 else (1 if y_max <= 6 else max(1, round(y_max / 5)))
    ticks, t = [], step
    while t < y_max:
        ticks.append(round(t, 2))
        t += step
    return ticks
