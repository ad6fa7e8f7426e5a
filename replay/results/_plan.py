"""How many cases and trials a comparison needs to see a drop (``replay plan``).

A paired comparison of two runs on m cases with K trials each sees the suite's change
through the per-case differences, whose variance is ``s_d^2(K) = tau^2 + V_a(K) + V_b(K)``:
``tau^2`` the spread of the true change between cases (0 for a drop shared by all cases;
estimated from a pair of runs), ``V(K)`` a case's trial-to-trial variance of its pass^k
estimate at K trials (``trial_variance``), averaged over the cases. Then
``m = (t_{1-a/2} + z_power)^2 * s_d^2(K) / d^2`` cases detect a drop of d, never fewer than
the ``z^2 (1-d)/d`` it takes, with no spread at all, to bound an unseen change below d.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

from ._metrics import CONFIDENCE, CaseCounts, pass_hat_k
from ._paired import POWER, compare_runs, trials_by_case
from ._stats import mean_and_variance, normal_quantile, t_quantile, trial_variance
from ._store import Store

DETECT = 0.05
"""The default drop a plan is for (``--detect``)."""
TRIAL_STEPS = (1, 2, 4, 8, 16, 32)
"""Trials per case a plan lists (with the run's own)."""


@dataclass(frozen=True, slots=True)
class PlanRow:
    """Cases needed at one number of trials per case."""

    trials: int
    cases: int


@dataclass(frozen=True, slots=True)
class FigurePlan:
    """What detecting a drop of one figure (pass^1 or pass^k) takes."""

    name: str
    k: int
    needs: tuple[PlanRow, ...]
    """Cases needed at each number of trials per case (at least k)."""
    detectable: float | None
    """The smallest drop a comparison of this many cases and trials detects (None
    without cases, or when the trials are fewer than k)."""
    spread: float
    """``tau^2``: the variance of the true change between cases (0 unless planned from
    a pair of runs)."""


@dataclass(frozen=True, slots=True)
class Plan:
    """A sample-size plan for a paired comparison (``plan``)."""

    source: str
    """What it was planned from: a run, a pair of runs, or assumptions."""
    cases: int
    trials: int
    """Cases and trials per case as they are (the median trials of a case)."""
    detect: float
    confidence: float
    power: float
    figures: tuple[FigurePlan, ...]
    zero_failure_trials: int
    """Trials that, all passing, bound a case's failure rate below ``detect`` at
    ``confidence`` (one-sided; about ``3/detect`` at 95%)."""


def plan(
    store: Store | None = None,
    run: str | None = None,
    *,
    candidate: str | None = None,
    pass_rate: float | None = None,
    cases: int | None = None,
    trials: int | None = None,
    k: int | None = None,
    detect: float = DETECT,
    power: float = POWER,
    confidence: float = CONFIDENCE,
) -> Plan:
    """Plan the cases and trials per case a comparison needs to detect a drop of ``detect``.

    From one run (``run``): its cases' pass rates, assuming a drop shared by all cases.
    From a pair (``run`` as the baseline, ``candidate``): both runs' rates and the
    spread of their change between cases. From assumptions (``pass_rate``, ``cases``,
    ``trials``, no store): every case at that rate.

    Raises:
        ValueError: A figure is outside (0, 1), ``cases < 2``, ``trials`` or ``k < 1``,
            or neither a run nor ``pass_rate`` and ``cases`` is given.
        ConfigError: A run is not in the store.
    """
    for name, value in (("detect", detect), ("power", power), ("confidence", confidence)):
        if not 0.0 < value < 1.0:
            raise ValueError(f"{name} must be between 0 and 1 (got {value})")
    if k is not None and k < 1:
        raise ValueError(f"k must be >= 1 (got {k})")
    if run is not None and store is not None:
        if candidate is None:
            rates = _rates(_run_counts(store, run))
            sides, pairs, source = [rates, rates], [], f"run {run}"
        else:
            changes = compare_runs(store, run, candidate).changes
            pairs = [(c.a, c.b) for c in changes if c.a.n and c.b.n]
            sides = [_rates([a for a, _ in pairs]), _rates([b for _, b in pairs])]
            source = f"runs {run} and {candidate}"
        if len(sides[0]) < 2:
            raise ValueError(f"{source} has fewer than two graded cases: nothing to plan from")
        m = len(sides[0])
        now = sorted(n for _, n in sides[0])[m // 2]
        top = k if k is not None else min(n for _, n in sides[0])
    elif pass_rate is not None and cases is not None:
        if not 0.0 <= pass_rate <= 1.0:
            raise ValueError(f"pass rate must be between 0 and 1 (got {pass_rate})")
        if cases < 2 or (trials is not None and trials < 1):
            raise ValueError(f"need at least 2 cases and 1 trial (got {cases}, {trials})")
        m, now, pairs = cases, trials or 8, []
        sides, source = [[(pass_rate, 0)]] * 2, f"pass rate {pass_rate} assumed"
        top = k if k is not None else now
    else:
        raise ValueError(
            "plan from a run, a pair of runs (baseline and candidate), or assumptions "
            "(a pass rate and a number of cases)"
        )
    figures = tuple(
        _figure(sides, _observed(pairs, kk), kk, m, now, detect, power, confidence)
        for kk in ([1, top] if top > 1 else [1])
    )
    zero = math.ceil(math.log(1 - confidence) / math.log1p(-detect))
    return Plan(source, m, now, detect, confidence, power, figures, zero)


def _rates(counts: Sequence[CaseCounts]) -> list[tuple[float, int]]:
    """Each graded case's plug-in rate and trials."""
    return [(c.c / c.n, c.n) for c in counts if c.n]


def _run_counts(store: Store, run: str) -> list[CaseCounts]:
    """Each case's verdict counts: the trials alone, none of the report's other reading."""
    return [
        CaseCounts.from_trials(case_id, [t.verdict for t in rows])
        for case_id, rows in trials_by_case(store, run).items()
    ]


def _variance(p: float, n: int, trials: int, k: int) -> float:
    """A case's variance of pass^k at ``trials`` trials, its rate ``p`` seen over n trials.

    A rate seen over n trials understates p(1-p) by (n-1)/n: corrected where n > 1
    (n = 0: an assumed rate, taken as exact).
    """
    return trial_variance(p, trials, k) * (n / (n - 1) if n > 1 else 1.0)


def _within(rates: list[tuple[float, int]], trials: int, k: int) -> float:
    """The mean over cases of a case's variance of pass^k at ``trials`` trials."""
    return math.fsum(_variance(p, n, trials, k) for p, n in rates) / len(rates)


def _observed(pairs: Sequence[tuple[CaseCounts, CaseCounts]], k: int) -> tuple[float, float] | None:
    """The variance of the per-case change of pass^k in a pair of runs, and trial noise's.

    The second is what trial noise alone would give it; None without two such cases.
    """
    usable = [(a, b) for a, b in pairs if a.n >= k and b.n >= k]
    if len(usable) < 2:
        return None
    diffs = [pass_hat_k(b.n, b.c, k) - pass_hat_k(a.n, a.c, k) for a, b in usable]
    noise = math.fsum(
        _variance(a.c / a.n, a.n, a.n, k) + _variance(b.c / b.n, b.n, b.n, k) for a, b in usable
    )
    return mean_and_variance(diffs)[1], noise / len(usable)


def _figure(
    sides: list[list[tuple[float, int]]],
    observed: tuple[float, float] | None,
    k: int,
    m: int,
    now: int,
    detect: float,
    power: float,
    confidence: float,
) -> FigurePlan:
    """What detecting a drop of one figure takes, at each number of trials per case.

    A pair's observed variance anchors the plan at the trials it ran (so ``plan`` and
    ``gate`` agree there); the binomial model carries it to other numbers of trials.
    """
    spread = 0.0 if observed is None else max(0.0, observed[0] - observed[1])

    def variance(trials: int) -> float:
        model = sum(_within(side, trials, k) for side in sides)
        if observed is None:
            return model
        seen, noise = observed
        if seen >= noise:
            return spread + model
        return seen * model / noise  # less spread than the model's noise: scaled to it

    steps = sorted({s for s in (*TRIAL_STEPS, now) if s >= k})
    needs = tuple(PlanRow(t, _cases(variance(t), detect, power, confidence)) for t in steps)
    detectable = _detectable(variance(now), m, power, confidence) if now >= k else None
    return FigurePlan(f"pass^{k}", k, needs, detectable, spread)


def _factor(m: int, power: float, confidence: float) -> float:
    alpha = 1 - confidence
    return t_quantile(1 - alpha / 2, max(m - 1, 1)) + normal_quantile(power)


def _floor(m: int, confidence: float) -> float:
    """The least a comparison of m cases can claim with no spread at all: ``z^2/(m+z^2)``."""
    z2 = normal_quantile(1 - (1 - confidence) / 2) ** 2
    return z2 / (m + z2)


def _detectable(variance: float, m: int, power: float, confidence: float) -> float:
    return max(_factor(m, power, confidence) * math.sqrt(variance / m), _floor(m, confidence))


def _cases(variance: float, detect: float, power: float, confidence: float) -> int:
    """The fewest cases whose detectable drop is at most ``detect`` (it falls as cases grow)."""
    low, high = 1, 2
    while _detectable(variance, high, power, confidence) > detect:
        low, high = high, high * 2
    while high - low > 1:  # low detects more than ``detect``, high does not
        middle = (low + high) // 2
        if _detectable(variance, middle, power, confidence) > detect:
            low = middle
        else:
            high = middle
    return high
