"""Trial metrics: pass@k, pass^k, suite means with their intervals (pure; the maths in _stats)."""

from __future__ import annotations

import functools
import math
import statistics
from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field

from ..graders import Verdict
from ._stats import (
    Interval,
    choose_ratio,
    clustered_se,
    fisher_exact,
    naive_se,
    suite_interval,
    wilson_interval,
)

VERDICTS: tuple[str, ...] = tuple(verdict.value for verdict in Verdict)
"""Every verdict's name, in the order counts list them."""
CONFIDENCE = 0.95
"""The default confidence of every interval (``replay report --confidence``)."""


def _check(n: int, c: int, k: int, suffix: str = "") -> None:
    n_, c_ = f"n{suffix}", f"c{suffix}"
    if n < 1:
        raise ValueError(f"{n_} must be >= 1 (got {n_}={n})")
    if not 0 <= c <= n:
        raise ValueError(f"{c_} must satisfy 0 <= {c_} <= {n_} (got {c_}={c}, {n_}={n})")
    if not 1 <= k <= n:
        raise ValueError(f"k must satisfy 1 <= k <= n (got k={k}, n={n})")


def pass_at_k(n: int, c: int, k: int) -> float:
    """Unbiased pass@k, ``1 - C(n-c, k) / C(n, k)``: P(one of k trials drawn from the n passes).

    Args:
        n: Graded trials (passes + fails), at least 1.
        c: Passing trials, ``0 <= c <= n``.
        k: Sample size, ``1 <= k <= n``.

    Raises:
        ValueError: If any argument is out of range.
    """
    _check(n, c, k)
    return 1.0 - choose_ratio(n - c, n, k)


def pass_hat_k(n: int, c: int, k: int) -> float:
    """Unbiased pass^k, ``C(c, k) / C(n, k)``: P(k trials drawn from the n all pass).

    Arguments and errors are those of `pass_at_k`.
    """
    _check(n, c, k)
    return choose_ratio(c, n, k)


@dataclass(frozen=True, slots=True)
class CaseCounts:
    """How often each verdict occurred over the trials of one case.

    Only ``pass`` and ``fail`` are graded: ``unknown``, ``unsupported`` and ``error``
    are counted but kept out of ``n``.

    Attributes:
        case_id: The case's identifier.
        verdicts: Count per verdict (a normalised copy: every verdict present, maybe 0).
    """

    case_id: str
    verdicts: Mapping[str, int] = field(hash=False)

    def __post_init__(self) -> None:
        unknown = sorted(set(self.verdicts) - set(VERDICTS))
        if unknown:
            raise ValueError(f"case {self.case_id!r}: unknown verdicts {unknown}; use {VERDICTS}")
        counts = {v: self.verdicts.get(v, 0) for v in VERDICTS}
        if any(count < 0 for count in counts.values()):
            raise ValueError(f"case {self.case_id!r}: verdict counts must be >= 0 (got {counts})")
        object.__setattr__(self, "verdicts", counts)

    @classmethod
    def from_trials(cls, case_id: str, verdicts: Iterable[Verdict | str]) -> CaseCounts:
        """Count a sequence of per-trial verdicts."""
        return cls(case_id, Counter(getattr(v, "value", v) for v in verdicts))

    @property
    def n(self) -> int:
        """Graded trials: passes + fails."""
        return self.c + self.fail

    @property
    def c(self) -> int:
        """Passing trials."""
        return self.verdicts[Verdict.PASS]

    @property
    def fail(self) -> int:
        """Trials whose verdict is ``fail``."""
        return self.verdicts[Verdict.FAIL]

    @property
    def unknown(self) -> int:
        """Trials whose verdict is ``unknown``."""
        return self.verdicts[Verdict.UNKNOWN]

    @property
    def unsupported(self) -> int:
        """Trials whose verdict is ``unsupported``."""
        return self.verdicts[Verdict.UNSUPPORTED]

    @property
    def error(self) -> int:
        """Trials whose verdict is ``error``."""
        return self.verdicts[Verdict.ERROR]


@dataclass(frozen=True, slots=True)
class CaseMetrics:
    """pass@k and pass^k of one case, keyed by k (empty when the case has no graded trial).

    Attributes:
        counts: The verdict counts the metrics come from.
        pass_at: pass@k per k.
        pass_hat: pass^k per k.
        pass1_ci: Wilson interval of the pass rate, None when ``n == 0``.
        pass_at_ci: An interval of pass@k per k: Wilson's on the rate, mapped to pass@k.
        pass_hat_ci: An interval of pass^k per k: Wilson's on the rate, mapped to pass^k.
    """

    counts: CaseCounts
    pass_at: Mapping[int, float]
    pass_hat: Mapping[int, float]
    pass1_ci: Interval | None
    pass_at_ci: Mapping[int, Interval] = field(default_factory=dict)
    pass_hat_ci: Mapping[int, Interval] = field(default_factory=dict)


def case_metrics(
    counts: CaseCounts, ks: Iterable[int] | None = None, *, confidence: float = CONFIDENCE
) -> CaseMetrics:
    """Compute pass@k and pass^k of one case, each with an interval.

    Args:
        counts: The case's verdict counts.
        ks: The k values wanted (default ``1..n``); those above ``n`` are left out,
            because the estimators are undefined there.
        confidence: The intervals' confidence level.

    Raises:
        ValueError: If some k is below 1.
    """
    n, c = counts.n, counts.c
    wanted = sorted(set(range(1, n + 1) if ks is None else ks))
    if wanted and wanted[0] < 1:
        raise ValueError(f"k must be >= 1 (got k={wanted[0]})")
    return CaseMetrics(counts, *_figures(n, c, tuple(k for k in wanted if k <= n), confidence))


_Figures = tuple[
    dict[int, float], dict[int, float], Interval | None, dict[int, Interval], dict[int, Interval]
]


@functools.lru_cache(maxsize=4096)
def _figures(n: int, c: int, usable: tuple[int, ...], confidence: float) -> _Figures:
    """``case_metrics``' figures of ``c`` passes in ``n``, for the k in ``usable``.

    (Cases of a large run share their counts: each pair is computed once. The mappings
    are shared, and read only.)
    """
    at: dict[int, float] = {}
    hat: dict[int, float] = {}
    at_ci: dict[int, Interval] = {}
    hat_ci: dict[int, Interval] = {}
    rate = wilson_interval(c, n, confidence) if n else None
    # One pass over k with running products: C(c,k)/C(n,k) gains the factor (c-k+1)/(n-k+1)
    # at each k (the same factors, in the same order, as ``pass_hat_k``), and the interval's
    # ends their k-th powers (``case_interval``'s mapping): O(n) a case, not O(n^2).
    ratio_hat = ratio_miss = 1.0
    low_k = high_k = miss_low = miss_high = 1.0
    low, high = rate if rate else (0.0, 0.0)
    wanted = set(usable)
    for k in range(1, max(usable, default=0) + 1):
        ratio_hat *= max(c - k + 1, 0) / (n - k + 1)
        ratio_miss *= max(n - c - k + 1, 0) / (n - k + 1)
        low_k, high_k = low_k * low, high_k * high
        miss_low, miss_high = miss_low * (1 - low), miss_high * (1 - high)
        if k in wanted:
            hat[k], at[k] = ratio_hat, 1.0 - ratio_miss
            hat_ci[k] = Interval(min(low_k, hat[k]), max(high_k, hat[k]))
            at_ci[k] = Interval(min(1 - miss_low, at[k]), max(1 - miss_high, at[k]))
    return at, hat, rate, at_ci, hat_ci


SUITE_METHOD = (
    "each case's unbiased estimate, averaged over cases; Wilson's interval on an effective "
    "number of cases (Korn-Graubard), t-adjusted: a formula, no resampling, no seed"
)
"""How a suite figure's interval is computed (``replay report`` prints it)."""
ONE_CASE_METHOD = "one case: Wilson's interval on its trials, mapped to pass^k and pass@k"
"""The method when a suite has a single graded case."""


@dataclass(frozen=True, slots=True)
class SuiteMetrics:
    """Per-k means over the cases of a suite, each with an interval.

    The suite figures estimate the expected pass@k / pass^k of a case drawn from the
    population the suite's cases stand for; their intervals resample cases, not trials
    (trials of one case move together), so a suite of few cases is uncertain however
    many trials each ran. See ``replay.suite_interval``.

    Attributes:
        cases: Metrics of every case, in input order.
        pass_at: Mean pass@k over the cases with ``n >= k``.
        pass_hat: Mean pass^k over the cases with ``n >= k``.
        cases_used: For each k in ``1..k_max``, how many cases entered the mean (a k with
            0 cases has no entry in ``pass_at``/``pass_hat``).
        excluded: Ids of the cases with no graded trial, left out of every mean.
        totals: Trials per verdict over the whole suite.
        pass1_ci: The interval of the mean pass^1 (= mean pass@1), None without graded
            cases.
        pass_at_ci: The interval of each mean pass@k.
        pass_hat_ci: The interval of each mean pass^k.
        confidence: The intervals' confidence level.
        method: How the intervals were computed.
        pass1_se: The clustered standard error of the mean pass^1 (the cases' spread),
            None below two graded cases.
        pass1_se_naive: The standard error if every trial were independent: too small
            when trials of a case agree, as they do.
    """

    cases: tuple[CaseMetrics, ...]
    pass_at: Mapping[int, float]
    pass_hat: Mapping[int, float]
    cases_used: Mapping[int, int]
    excluded: tuple[str, ...]
    totals: Mapping[str, int]
    pass1_ci: Interval | None
    pass_at_ci: Mapping[int, Interval] = field(default_factory=dict)
    pass_hat_ci: Mapping[int, Interval] = field(default_factory=dict)
    confidence: float = CONFIDENCE
    method: str = SUITE_METHOD
    pass1_se: float | None = None
    pass1_se_naive: float | None = None


def suite_metrics(
    cases: Iterable[CaseCounts], k_max: int | None = None, *, confidence: float = CONFIDENCE
) -> SuiteMetrics:
    """Average pass@k and pass^k over cases, each with an interval over cases.

    Each case weighs the same whatever its trial count. The intervals are
    ``suite_interval``'s over the per-case estimates (they keep their coverage on
    suites of 20 cases: ``bench/stats.py``); with one graded case, its own
    (``case_interval``).

    Args:
        cases: Verdict counts per case; case ids must be unique.
        k_max: Largest k reported (default: the largest ``n`` among the cases).
        confidence: The intervals' confidence level.

    Raises:
        ValueError: On duplicate case ids, if ``k_max < 1``, or ``confidence`` is
            outside (0, 1).
    """
    counts = tuple(cases)
    seen = Counter(cc.case_id for cc in counts)
    duplicates = sorted(cid for cid, times in seen.items() if times > 1)
    if duplicates:
        raise ValueError(f"duplicate case ids: {duplicates}")
    if k_max is not None and k_max < 1:
        raise ValueError(f"k_max must be >= 1 (got k_max={k_max})")
    top = max((cc.n for cc in counts), default=0) if k_max is None else k_max
    per_case = tuple(case_metrics(cc, range(1, top + 1), confidence=confidence) for cc in counts)
    return suite_of(per_case, top, confidence)


def suite_of(per_case: Sequence[CaseMetrics], top: int, confidence: float) -> SuiteMetrics:
    """``suite_metrics`` of cases whose metrics are computed (each for k up to ``top``).

    (``build_report`` computes each case's once, for its row and for every mean it is in.)
    """
    per_case = tuple(per_case)
    counts = tuple(m.counts for m in per_case)
    pass_at: dict[int, float] = {}
    pass_hat: dict[int, float] = {}
    at_ci: dict[int, Interval] = {}
    hat_ci: dict[int, Interval] = {}
    used: dict[int, int] = {}
    for k in range(1, top + 1):
        having = [m for m in per_case if k in m.pass_at]
        used[k] = len(having)
        if not having:
            continue
        ats, hats = [m.pass_at[k] for m in having], [m.pass_hat[k] for m in having]
        pass_at[k] = math.fsum(ats) / len(having)
        pass_hat[k] = math.fsum(hats) / len(having)
        if len(having) == 1:
            at_ci[k], hat_ci[k] = having[0].pass_at_ci[k], having[0].pass_hat_ci[k]
        else:
            at_ci[k], hat_ci[k] = suite_interval(ats, confidence), suite_interval(hats, confidence)
    graded = [m for m in per_case if 1 in m.pass_hat]
    rates = [m.pass_hat[1] for m in graded]
    return SuiteMetrics(
        cases=per_case,
        pass_at=pass_at,
        pass_hat=pass_hat,
        cases_used=used,
        excluded=tuple(cc.case_id for cc in counts if cc.n == 0),
        totals={v: sum(cc.verdicts[v] for cc in counts) for v in VERDICTS},
        pass1_ci=hat_ci.get(1),
        pass_at_ci=at_ci,
        pass_hat_ci=hat_ci,
        confidence=confidence,
        method=ONE_CASE_METHOD if len(graded) == 1 else SUITE_METHOD,
        pass1_se=clustered_se(rates) if len(rates) > 1 else None,
        pass1_se_naive=naive_se(rates, [m.counts.n for m in graded]) if rates else None,
    )


@dataclass(frozen=True, slots=True)
class ShareSummary:
    """How partial credit spread over trials: the shares' mean, quartiles and ends.

    The whole-task verdict stays the headline (pass^k); this says how close the
    trials that did not make it came (``replay report``, cases scored ``weighted``).
    Quartiles are the inclusive method's (``statistics.quantiles``): one trial's share
    is every quartile.

    Attributes:
        trials: The shares summarised, one per trial.
        mean: Their mean.
        low: The smallest.
        q1: The first quartile.
        median: The median.
        q3: The third quartile.
        high: The largest.
        cases: The cases they come from.
        case_mean: The mean of the cases' means (each case weighs the same, as in the
            suite's pass^k); None for one case's summary.
    """

    trials: int
    mean: float
    low: float
    q1: float
    median: float
    q3: float
    high: float
    cases: int = 1
    case_mean: float | None = None


def share_summary(
    shares: Iterable[float], by_case: Mapping[str, Sequence[float]] | None = None
) -> ShareSummary | None:
    """Summarise shares in [0, 1] (None for none); ``by_case`` adds the mean of case means.

    Args:
        shares: One share per trial.
        by_case: The same shares grouped by case, for ``cases`` and ``case_mean``.
    """
    values = sorted(shares)
    if not values:
        return None
    if len(values) == 1:
        q1 = median = q3 = values[0]
    else:
        q1, median, q3 = statistics.quantiles(values, n=4, method="inclusive")
    means = [statistics.fmean(v) for v in (by_case or {}).values() if v]
    return ShareSummary(
        trials=len(values),
        mean=statistics.fmean(values),
        low=values[0],
        q1=q1,
        median=median,
        q3=q3,
        high=values[-1],
        cases=len(means) if by_case is not None else 1,
        case_mean=statistics.fmean(means) if means else None,
    )


def two_proportion_test(c1: int, n1: int, c2: int, n2: int) -> float:
    """Two-sided p-value that c1 passes of n1 graded trials and c2 of n2 share one pass rate.

    Unpaired, and blind to trials of one case moving together: ``replay diff`` and
    ``replay gate`` compare runs paired by case instead (``compare_runs``); this stays
    for a single pair of samples and as the baseline ``bench/stats.py`` measures against.

    Uses the pooled two-proportion z-test, or Fisher's exact test when any expected
    cell count of the 2x2 table is below 5 (including all-pass or all-fail samples).

    Raises:
        ValueError: If a sample is empty (``n < 1``) or a pass count is outside ``0..n``.
    """
    _check(n1, c1, 1, "1")
    _check(n2, c2, 1, "2")
    pooled = (c1 + c2) / (n1 + n2)
    expected = (n1 * pooled, n1 * (1 - pooled), n2 * pooled, n2 * (1 - pooled))
    if min(expected) < 5:
        return fisher_exact(c1, n1, c2, n2)
    se = math.sqrt(pooled * (1 - pooled) * (1 / n1 + 1 / n2))
    z = (c1 / n1 - c2 / n2) / se
    return math.erfc(abs(z) / math.sqrt(2))
