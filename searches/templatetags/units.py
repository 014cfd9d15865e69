"""Numbers for people: milliseconds, FLOPs, bytes and ages (`{% load units %}`)."""

from django import template

register = template.Library()

DASH = "—"


def _number(value):
    try:
        return float(value)
    except (TypeError, ValueError):
        return None


@register.filter
def ms(value):
    """A duration in milliseconds, to about three significant figures: 2.68 ms, 0.0412 ms."""
    v = _number(value)
    if v is None:
        return DASH
    if v >= 100:
        return f"{v:.0f} ms"
    if v >= 10:
        return f"{v:.1f} ms"
    if v >= 1:
        return f"{v:.2f} ms"
    return f"{v:.3g} ms"


def _si(v, unit):
    for factor, prefix in ((1e15, "P"), (1e12, "T"), (1e9, "G"), (1e6, "M"), (1e3, "k")):
        if abs(v) >= factor:
            return f"{v / factor:.3g} {prefix}{unit}"
    return f"{v:.3g} {unit}"


@register.filter
def flops(value):
    v = _number(value)
    return DASH if v is None else _si(v, "FLOP")


@register.filter
def bytes_si(value):
    v = _number(value)
    return DASH if v is None else _si(v, "B")


@register.filter
def tolerance(value):
    """atol/rtol as stored: None means the dtype's default, decided by the runner."""
    v = _number(value)
    return "dtype default" if v is None else f"{v:g}"


@register.filter
def age(seconds):
    """How long ago, from a number of seconds, coarser as it grows: 12 s, 4 min, 3 h, 2 d."""
    v = _number(seconds)
    if v is None:
        return DASH
    for unit, size in (("d", 86400), ("h", 3600), ("min", 60)):
        if v >= 2 * size:
            return f"{v // size:.0f} {unit}"
    return f"{max(v, 0):.0f} s"


@register.filter
def percent(fraction):
    """A fraction as a whole percentage: 0.7207 -> 72%."""
    v = _number(fraction)
    return DASH if v is None else f"{v:.0%}"
