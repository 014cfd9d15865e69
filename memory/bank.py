"""The idea bank: what the team's earlier ideas achieved, per idea key, as plain arithmetic.

The caller (searches/selectors/ideas.py) reads the outcomes from the searches a viewer may see and
passes them in; nothing here touches the database, so the numbers are always those of the rows as
they are now (a kernel quarantined or verified later counts as it stands) and the same functions
serve the prompt's priors, the ranking of a reply's ideas, the Ideas page and the benchmark.

An outcome is one idea: an attempt at its technique. It succeeded when one of its kernels is trusted
(correct, not quarantined, reproduced where a rerun was made) and faster than the idea's parent; its
gain is the best such kernel's speedup over the parent."""

from collections import Counter
from dataclasses import dataclass, field, replace
from statistics import median

from .keys import TECHNIQUES, IdeaKey

FAILURES_SHOWN = 3
EXAMPLES_SHOWN = 2
# The gain hoped of a technique that has not succeeded on the similar problems, until one that did shows
# better: what makes an untried technique worth a look beside one that gave a few percent.
HOPED_GAIN = 1.25


@dataclass(frozen=True)
class Outcome:
    key: IdeaKey
    idea_id: int
    search_id: int
    title: str = ""
    model: str = ""  # the model of the call that proposed it ("playbook" for the built-in ideas)
    gain: float | None = None  # the best trusted kernel's speedup over the idea's parent; None: none trusted
    expected: float | None = None  # the speedup over the parent the proposer expected
    cost_usd: float = 0.0  # its share of the ideas call plus its kernel and repair calls
    failures: tuple[str, ...] = ()  # "verdict: reason" of its failed kernels
    kernel_ids: tuple[int, ...] = ()

    @property
    def succeeded(self) -> bool:
        return self.gain is not None and self.gain > 1.0


@dataclass(frozen=True)
class Stats:
    """One key's (or one technique's) record: the cells of the Ideas page and the lines of a prior."""

    technique: str
    attempts: int
    successes: int
    median_gain: float | None  # of the ideas with a trusted kernel
    best_gain: float | None
    cost_usd: float
    failures: tuple[tuple[str, int], ...] = ()  # the most frequent failure reasons, with their counts
    examples: tuple[tuple[str, float], ...] = ()  # (title, gain) of the ideas that worked best
    idea_ids: tuple[int, ...] = field(default=(), repr=False)
    kernel_ids: tuple[int, ...] = field(default=(), repr=False)
    success_gain: float | None = None  # the median gain of the ideas that succeeded
    rating: float = 0.0  # the gain over 1 one more attempt may bring (rating(); priors() sets it)

    @property
    def success_rate(self) -> float:
        return self.successes / self.attempts if self.attempts else 0.0

    @property
    def likely_rate(self) -> float:
        """Laplace's estimate of the success rate: one success and one failure assumed, so one attempt neither
        crowns nor buries a technique."""
        return (self.successes + 1) / (self.attempts + 2)


def stats_of(technique: str, outcomes: list[Outcome]) -> Stats:
    gains = [o.gain for o in outcomes if o.gain is not None]
    wins = sorted((o for o in outcomes if o.succeeded), key=lambda o: -o.gain)
    reasons = Counter(f for o in outcomes for f in dict.fromkeys(o.failures))
    return Stats(
        technique=technique, attempts=len(outcomes), successes=len(wins),
        median_gain=median(gains) if gains else None, best_gain=max(gains) if gains else None,
        cost_usd=sum(o.cost_usd for o in outcomes), failures=tuple(reasons.most_common(FAILURES_SHOWN)),
        examples=tuple((o.title, o.gain) for o in wins[:EXAMPLES_SHOWN]),
        idea_ids=tuple(o.idea_id for o in outcomes), kernel_ids=tuple(k for o in outcomes for k in o.kernel_ids),
        success_gain=median(o.gain for o in wins) if wins else None,
    )


def summarise(outcomes: list[Outcome], by=lambda o: o.key) -> dict:
    """{group: Stats} over the outcomes, grouped by `by` (an IdeaKey by default)."""
    groups: dict = {}
    for outcome in outcomes:
        groups.setdefault(by(outcome), []).append(outcome)
    return {group: stats_of(rows[0].key.technique, rows) for group, rows in groups.items()}


def rating(stats: Stats, hoped: float) -> float:
    """The gain over 1 to expect of one more attempt: Laplace's estimate of its success rate (one success and
    one failure assumed, so one attempt neither crowns nor buries a technique) times its median gain, or, with
    no success yet, the `hoped` gain (HOPED_GAIN, or the best technique's of the scope where higher): a
    technique never tried is worth a look beside one that gave a few percent, not beside one that works."""
    return stats.likely_rate * ((stats.success_gain if stats.successes else hoped) - 1.0)


def priors(key: IdeaKey, outcomes: list[Outcome], *, exclude_search: int | None = None,
           untried: tuple = tuple(TECHNIQUES)) -> list[Stats]:
    """Per technique, what the outcomes of similar problems (IdeaKey.similar) achieved, rated, the best first;
    a technique with a failure but no success still shows (what failed is half the lesson), and once the scope
    has any outcome, each technique of `untried` never tried there shows with no attempts. Empty without
    outcomes."""
    similar = [o for o in outcomes if key.similar(o.key) and o.search_id != exclude_search]
    table = summarise(similar, by=lambda o: o.key.technique)
    if not table:
        return []
    table.update({t: Stats(technique=t, attempts=0, successes=0, median_gain=None, best_gain=None, cost_usd=0.0)
                  for t in untried if t not in table})
    hoped = max([HOPED_GAIN] + [s.success_gain for s in table.values() if s.success_gain])
    rated = [replace(s, rating=rating(s, hoped)) for s in table.values()]
    return sorted(rated, key=lambda s: (-s.rating, -s.attempts, list(TECHNIQUES).index(s.technique)
                                        if s.technique in TECHNIQUES else len(TECHNIQUES)))


def rank(techniques: list[str], known: list[Stats], weight: float, expected: list | None = None,
         trust: float | None = None) -> list[int]:
    """The order to keep a reply's ideas in (indices into `techniques`, the model's order): each idea
    scored by its place in the reply and its prior value, the prior weighing `weight` (0..1). The prior
    value is its technique's rating; where the model predicted the idea's speedup and its predictions on
    similar problems are known (`trust`: its median measured / predicted), the technique's likely success
    rate times the prediction so corrected."""
    if weight <= 0 or not known or len(techniques) < 2:
        return list(range(len(techniques)))
    by_technique = {s.technique: s for s in known}
    values = []
    for i, technique in enumerate(techniques):
        stats = by_technique.get(technique)
        predicted = expected[i] if expected and trust else None
        if stats is None:
            values.append(0.0)
        elif predicted:
            values.append(stats.likely_rate * (predicted * trust - 1.0))
        else:
            values.append(stats.rating)
    low, high = min(values), max(values)
    spread = (high - low) or 1.0
    n = len(techniques)
    scores = [weight * (v - low) / spread + (1 - weight) * (1 - i / n) for i, v in enumerate(values)]
    return sorted(range(n), key=lambda i: (-scores[i], i))


@dataclass(frozen=True)
class Calibration:
    group: str  # a model, or "model / technique"
    ideas: int  # with a prediction and a trusted measurement
    predicted: float | None  # median predicted speedup over the parent
    measured: float | None  # median measured
    ratio: float | None  # median of measured / predicted (1.0: calibrated; under 1: optimistic)


def calibration_of(model: str, outcomes: list[Outcome]) -> Calibration | None:
    """One model's calibration over the outcomes, or None before any of its predictions was measured."""
    return next(iter(calibration([o for o in outcomes if o.model == model])), None)


def calibration(outcomes: list[Outcome], by=lambda o: o.model) -> list[Calibration]:
    """Predicted against measured speedup over the parent, per model (or any grouping)."""
    groups: dict = {}
    for o in outcomes:
        if o.expected and o.gain is not None:
            groups.setdefault(by(o), []).append(o)
    return [Calibration(group=str(g), ideas=len(rows), predicted=median(o.expected for o in rows),
                        measured=median(o.gain for o in rows), ratio=median(o.gain / o.expected for o in rows))
            for g, rows in sorted(groups.items(), key=lambda item: str(item[0]))]


def points(gain: float | None) -> float:
    """Percentage points of speedup over the parent an idea bought (none for a slower or failed one)."""
    return max(0.0, (gain - 1.0) * 100) if gain else 0.0


def dollars_per_point(outcomes: list[Outcome]) -> float | None:
    """What a point of speedup cost: the outcomes' dollars over their points (None: no point bought)."""
    bought = sum(points(o.gain) for o in outcomes)
    return sum(o.cost_usd for o in outcomes) / bought if bought else None
