"""The statistics under a verdict on a version: quantiles, intervals, exact tests, power (pure).

Design notes (README, "How sure is a figure"): the unit is the case. A suite figure is the mean over
cases of each case's unbiased estimate; its interval resamples cases, not trials.

- Per case: Wilson's interval on the pass rate; pass^k and pass@k are monotone in the rate,
  so the same interval mapped through ``p**k`` (``1-(1-p)**k``) is one for them.
- Suite: the mean of m per-case values in [0, 1] with an effective-sample-size Wilson
  interval (Korn & Graubard's for clustered proportions): ``n_eff = x(1-x)/var(mean)``
  with ``var(mean) = sum((v - x)**2)/m**2`` (m for cases that all pass or all fail),
  shrunk by ``(z/t_{m-1})**2`` for the few degrees of freedom. It respects [0, 1] and
  is lopsided near its ends, where the normal interval is too short; with no spread
  between cases it falls back to ``n_eff = m`` (Wilson on m cases: all passing bounds
  the failure rate near ``z**2/m``, the "3/n" rule).
- Paired difference of two suites on the same cases: MOVER (Newcombe; Zou & Donner)
  from the two suite intervals and the cases' correlation, capped at ``1 - 2/(m+1)`` so
  that two identical runs still say how far an unseen case could move them.

``bench/stats.py`` checks the coverage of these by seeded simulation.
"""

from __future__ import annotations

import functools
import math
import operator
from collections.abc import Sequence
from itertools import repeat
from statistics import NormalDist
from typing import NamedTuple

_NORMAL = NormalDist()


class Interval(NamedTuple):
    """A two-sided interval; a tuple ``(low, high)``."""

    low: float
    high: float

    def contains(self, value: float) -> bool:
        """Whether ``low <= value <= high``."""
        return self.low <= value <= self.high


def _alpha(confidence: float) -> float:
    if not 0.0 < confidence < 1.0:
        raise ValueError(f"confidence must be between 0 and 1 (got {confidence})")
    return 1.0 - confidence


def normal_quantile(p: float) -> float:
    """The standard normal quantile at ``p`` (0 < p < 1)."""
    return _NORMAL.inv_cdf(p)


def _betacf(a: float, b: float, x: float) -> float:
    """The continued fraction of the incomplete beta function (modified Lentz)."""
    tiny, eps = 1e-300, 1e-15
    qab, qap, qam = a + b, a + 1.0, a - 1.0
    c, d = 1.0, 1.0 - qab * x / qap
    d = 1.0 / (d if abs(d) > tiny else tiny)
    h = d
    for m in range(1, 10_000):
        m2 = 2 * m
        even = m * (b - m) * x / ((qam + m2) * (a + m2))
        odd = -(a + m) * (qab + m) * x / ((a + m2) * (qap + m2))
        for aa in (even, odd):
            d = 1.0 + aa * d
            d = 1.0 / (d if abs(d) > tiny else tiny)
            c = 1.0 + aa / c
            c = c if abs(c) > tiny else tiny
            h *= d * c
        if abs(d * c - 1.0) < eps:
            break
    return h


def beta_cdf(x: float, a: float, b: float) -> float:
    """The regularized incomplete beta function ``I_x(a, b)`` (the Beta(a, b) CDF)."""
    if x <= 0.0:
        return 0.0
    if x >= 1.0:
        return 1.0
    log_front = (
        math.lgamma(a + b) - math.lgamma(a) - math.lgamma(b) + a * math.log(x) + b * math.log1p(-x)
    )
    if x < (a + 1.0) / (a + b + 2.0):
        return math.exp(log_front) * _betacf(a, b, x) / a
    return 1.0 - math.exp(log_front) * _betacf(b, a, 1.0 - x) / b


def t_cdf(t: float, df: float) -> float:
    """Student's t distribution's CDF with ``df`` degrees of freedom."""
    tail = 0.5 * beta_cdf(df / (df + t * t), df / 2.0, 0.5)
    return 1.0 - tail if t > 0 else tail


def _t_density(t: float, df: float) -> float:
    """Student's t distribution's density with ``df`` degrees of freedom."""
    log_c = math.lgamma((df + 1.0) / 2.0) - math.lgamma(df / 2.0) - 0.5 * math.log(df * math.pi)
    return math.exp(log_c - (df + 1.0) / 2.0 * math.log1p(t * t / df))


@functools.lru_cache(maxsize=1024)
def t_quantile(p: float, df: float) -> float:
    """Student's t quantile at ``p`` (0 < p < 1) with ``df >= 1`` degrees of freedom."""
    if not 0.0 < p < 1.0:
        raise ValueError(f"p must be between 0 and 1 (got {p})")
    if df > 1e7:  # and math.inf: the normal
        return normal_quantile(p)
    if p < 0.5:
        return -t_quantile(1.0 - p, df)
    # Newton's steps from the normal quantile (~6 CDFs where bisection took ~45: a
    # report's suite intervals ask for dozens of degrees of freedom), kept inside a
    # bracket that only shrinks; a step that would leave it halves it instead.
    low, high = 0.0, 1.0
    while t_cdf(high, df) < p:
        low, high = high, high * 2.0
    t = min(max(normal_quantile(p), low), high)
    for _ in range(200):
        error = t_cdf(t, df) - p
        if error == 0.0:
            return t
        if error < 0:
            low = t
        else:
            high = t
        density = _t_density(t, df)
        step = t - error / density if density > 0 else low - 1.0
        if not low < step < high:
            step = (low + high) / 2.0
        if abs(step - t) <= 1e-14 * max(1.0, t) or high - low <= 1e-13 * max(1.0, high):
            return step
        t = step
    return t


def _wilson(p: float, n: float, z: float) -> Interval:
    """Wilson's score interval for a proportion ``p`` out of ``n`` (``n`` may be fractional)."""
    z2 = z * z
    denominator = 1.0 + z2 / n
    centre = (p + z2 / (2 * n)) / denominator
    half = z * math.sqrt(max(p * (1 - p), 0.0) / n + z2 / (4 * n * n)) / denominator
    return Interval(max(0.0, min(p, centre - half)), min(1.0, max(p, centre + half)))


def wilson_interval(c: int, n: int, confidence: float = 0.95) -> Interval:
    """Wilson's score interval for ``c`` passes out of ``n`` trials of one case.

    Raises:
        ValueError: If ``n < 1``, ``c`` is outside ``0..n`` or ``confidence`` outside (0, 1).
    """
    if n < 1 or not 0 <= c <= n:
        raise ValueError(f"need 0 <= c <= n and n >= 1 (got c={c}, n={n})")
    return _wilson(c / n, n, normal_quantile(1 - _alpha(confidence) / 2))


def case_interval(
    c: int, n: int, k: int = 1, *, at_least_one: bool = False, confidence: float = 0.95
) -> Interval:
    """An interval for one case's pass^k (``at_least_one``: pass@k) from its trials.

    Wilson's interval on the pass rate mapped through ``p**k`` (pass@k: ``1-(1-p)**k``),
    both monotone, so it keeps Wilson's coverage; widened, where needed, to hold the
    unbiased estimate. Valid from one trial on.
    """
    rate = wilson_interval(c, n, confidence)
    if k > n:
        return mapped_interval(rate, k, None, at_least_one=at_least_one)
    estimate = 1.0 - choose_ratio(n - c, n, k) if at_least_one else choose_ratio(c, n, k)
    return mapped_interval(rate, k, estimate, at_least_one=at_least_one)


def mapped_interval(
    rate: Interval, k: int, estimate: float | None, *, at_least_one: bool = False
) -> Interval:
    """A pass-rate interval mapped to pass^k (``at_least_one``: pass@k), holding ``estimate``."""
    low, high = rate
    if at_least_one:
        low, high = 1 - (1 - low) ** k, 1 - (1 - high) ** k
    else:
        low, high = low**k, high**k
    if estimate is not None:
        low, high = min(low, estimate), max(high, estimate)
    return Interval(low, high)


def choose_ratio(a: int, n: int, k: int) -> float:
    """C(a, k) / C(n, k) for 0 <= a <= n as a running product (no big ints; rel. error ~k*1e-16)."""
    if a < k:
        return 0.0
    ratio = 1.0
    for i in range(k):
        ratio *= (a - i) / (n - i)
    return ratio


def mean_and_variance(values: Sequence[float]) -> tuple[float, float]:
    """The mean and the sample variance (``ddof=1``; 0 for a single value)."""
    m = len(values)
    mean = math.fsum(values) / m
    if m < 2:
        return mean, 0.0
    return mean, math.fsum((v - mean) ** 2 for v in values) / (m - 1)


def clustered_se(values: Sequence[float]) -> float:
    """The standard error of a mean over cases: the cases' sample SD over sqrt(m).

    This is the cluster-robust standard error of the case-weighted mean with the
    ``m/(m-1)`` small-sample factor: trials of one case move together, so the spread
    between cases, not the count of trials, sets it.
    """
    m = len(values)
    return math.sqrt(mean_and_variance(values)[1] / m) if m > 1 else math.nan


def naive_se(rates: Sequence[float], trials: Sequence[int]) -> float:
    """The standard error of the same mean if every trial were independent (too small).

    Each case's rate counts as a binomial proportion around the suite's mean:
    ``sqrt(sum(x(1-x)/n_i))/m`` with ``x`` the mean.
    """
    m = len(rates)
    mean = math.fsum(rates) / m
    return math.sqrt(math.fsum(mean * (1 - mean) / n for n in trials)) / m


def suite_interval(values: Sequence[float], confidence: float = 0.95) -> Interval:
    """An interval for the mean over a population of cases, from m cases' values in [0, 1].

    The effective-sample-size Wilson interval (see the module's notes). The estimand is
    the expected figure over the population the cases are drawn from, so it is as wide
    as the cases are few: 20 cases all passing still allow a failure rate near 16%.

    Raises:
        ValueError: Fewer than two values, or a value outside [0, 1].
    """
    m = len(values)
    if m < 2:
        raise ValueError(f"a suite interval needs at least 2 cases (got {m})")
    # (A report asks for hundreds of these over a large suite: each pass over the values
    # runs in C. A NaN slips past min and max, not past the sum.)
    total = math.fsum(values) if min(values) >= 0.0 and max(values) <= 1.0 else math.nan
    if math.isnan(total):
        raise ValueError("every value must be in [0, 1]")
    alpha = _alpha(confidence)
    z, t = normal_quantile(1 - alpha / 2), t_quantile(1 - alpha / 2, m - 1)
    mean = min(1.0, max(0.0, total / m))
    squares = math.fsum(map(pow, map(operator.sub, values, repeat(mean)), repeat(2)))
    spread = mean * (1 - mean)
    # var(mean) = squares / m^2: for cases that all pass or all fail, the binomial
    # p(1-p)/m, so n_eff is then m itself.
    n_eff = spread * m * m / squares if squares > 0 and spread > 0 else float(m)
    return _wilson(mean, n_eff * (z / t) ** 2, z)


def paired_interval(a: Sequence[float], b: Sequence[float], confidence: float = 0.95) -> Interval:
    """An interval for ``mean(b) - mean(a)`` over the population of cases, paired by case.

    MOVER from the two suite intervals and the cases' correlation (module notes).

    Raises:
        ValueError: The sequences differ in length, hold fewer than two cases, or a
            value is outside [0, 1].
    """
    m = len(a)
    if len(b) != m:
        raise ValueError(f"paired values differ in length ({m} and {len(b)})")
    la, ua = suite_interval(a, confidence)
    lb, ub = suite_interval(b, confidence)
    mean_a, var_a = mean_and_variance(a)
    mean_b, var_b = mean_and_variance(b)
    r = 0.0
    if var_a > 0 and var_b > 0:
        covariance = math.fsum((x - mean_a) * (y - mean_b) for x, y in zip(a, b, strict=True))
        # (Each variance's root apart: their product can underflow to 0 when both are tiny.)
        r = covariance / (m - 1) / (math.sqrt(var_a) * math.sqrt(var_b))
    r = min(r, 1.0 - 2.0 / (m + 1))
    delta = mean_b - mean_a
    below = (mean_b - lb) ** 2 + (ua - mean_a) ** 2 - 2 * r * (mean_b - lb) * (ua - mean_a)
    above = (ub - mean_b) ** 2 + (mean_a - la) ** 2 - 2 * r * (ub - mean_b) * (mean_a - la)
    return Interval(delta - math.sqrt(max(below, 0.0)), delta + math.sqrt(max(above, 0.0)))


def fisher_exact(c1: int, n1: int, c2: int, n2: int) -> float:
    """Two-sided Fisher exact p-value of ``[[c1, n1-c1], [c2, n2-c2]]``, in exact integers.

    The p-value sums the tables with the same margins no more likely than the observed
    one (as ``scipy.stats.fisher_exact`` does).

    Raises:
        ValueError: A sample is empty or a count is outside ``0..n``.
    """
    if n1 < 1 or n2 < 1 or not 0 <= c1 <= n1 or not 0 <= c2 <= n2:
        raise ValueError(f"need 0 <= c <= n, n >= 1 (got {c1}/{n1} and {c2}/{n2})")
    s = c1 + c2
    weights = {
        x: math.comb(n1, x) * math.comb(n2, s - x) for x in range(max(0, s - n2), min(s, n1) + 1)
    }
    observed = weights[c1]
    return min(1.0, sum(w for w in weights.values() if w <= observed) / math.comb(n1 + n2, s))


def benjamini_hochberg(p_values: Sequence[float]) -> list[float]:
    """Benjamini-Hochberg adjusted p-values (q-values), in the input's order.

    A case whose q-value is at most ``q`` is a discovery at false discovery rate ``q``.
    """
    m = len(p_values)
    order = sorted(range(m), key=lambda i: p_values[i])
    adjusted = [0.0] * m
    running = 1.0
    for rank in range(m, 0, -1):
        i = order[rank - 1]
        running = min(running, p_values[i] * m / rank)
        adjusted[i] = min(1.0, running)
    return adjusted


def detectable(se: float, confidence: float, power: float, df: float) -> float:
    """The smallest true change a two-sided test at ``confidence`` finds with ``power``.

    ``(t_{1-a/2, df} + z_power) * se``: the minimum detectable effect.
    """
    if not 0.0 < power < 1.0:
        raise ValueError(f"power must be between 0 and 1 (got {power})")
    alpha = _alpha(confidence)
    return (t_quantile(1 - alpha / 2, max(df, 1.0)) + normal_quantile(power)) * se


def trial_variance(p: float, trials: int, k: int = 1) -> float:
    """The variance of a case's unbiased pass^k over ``trials`` trials at pass rate ``p``.

    ``p(1-p)/trials`` for pass^1; for larger k, summed exactly over the binomial.
    """
    if trials < k:
        raise ValueError(f"pass^{k} needs at least {k} trials (got {trials})")
    if k == 1:
        return p * (1 - p) / trials
    if p <= 0.0 or p >= 1.0:
        return 0.0  # every trial fails, or every one passes: the estimate never moves
    # The binomial weights in logs: C(trials, c) overflows a float past ~1,000 trials.
    log_p, log_q, log_n = math.log(p), math.log1p(-p), math.lgamma(trials + 1)
    second = math.fsum(
        math.exp(
            log_n - math.lgamma(c + 1) - math.lgamma(trials - c + 1)
            + c * log_p + (trials - c) * log_q
        )
        * choose_ratio(c, trials, k) ** 2
        for c in range(k, trials + 1)
    )  # fmt: skip
    return max(0.0, second - p ** (2 * k))
