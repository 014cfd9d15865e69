"""Summary statistics shared by the suite and run scores."""

import math


def geomean(values) -> float | None:
    """The geometric mean of the positive values given; None when there are none."""
    values = [v for v in values if v is not None and v > 0]
    return math.exp(sum(math.log(v) for v in values) / len(values)) if values else None
