"""Trial metrics: pass@k, pass^k, suite means, intervals and a two-proportion test (pure)."""

from __future__ import annotations

import math
import statistics
from collections import Counter
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Literal

Verdict = Literal["pass", "fail", "unknown", "unsupported", "error"]
VERDICTS: tuple[Verdict, ...] = ("pass", "fail", "unknown", "unsupported", "error")
Z95 = 1.96
"""Two-sided 95% normal quantile used by every interval here."""


def _check(n: int, c: int, k: int, suffix: str = "") -> None:
    n_, c_ = f"n{suffix}", f"c{suffix}"
    if n < 1:
        raise ValueError(f"{n_} must be >= 1 (got {n_}={n})")
    if not 0 <= c <= n:
        raise ValueError(f"{c_} must satisfy 0 <= {c_} <= {n_} (got {c_}={c}, {n_}={n})")
    if not 1 <= k <= n:
        raise ValueError(f"k must satisfy 1 <= k <= n (got k={k}, n={n})")


def _choose_ratio(a: int, n: int, k: int) -> float:
    """C(a, k) / C(n, k) for 0 <= a <= n as a running product (no big ints; rel. error ~k*1e-16)."""
    if a < k:
        return 0.0
    ratio = 1.0
    for i in range(k):
        ratio *= (a - i) / (n - i)
    return ratio


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
    return 1.0 - _choose_ratio(n - c, n, k)


def pass_hat_k(n: int, c: int, k: int) -> float:
    """Unbiased pass^k, ``C(c, k) / C(n, k)``: P(k trials drawn from the n all pass).

    Arguments and errors are those of `pass_at_k`.
    """
    _check(n, c, k)
    return _choose_ratio(c, n, k)


def wilson_interval(c: int, n: int, z: float = Z95) -> tuple[float, float]:
    """Wilson score interval for a success rate of ``c`` out of ``n`` pooled trials.

    Raises:
        ValueError: If ``n < 1`` or ``c`` is outside ``0..n``.
    """
    _check(n, c, 1)
    p, z2 = c / n, z * z
    denom = 1.0 + z2 / n
    centre = (p + z2 / (2 * n)) / denom
    half = z * math.sqrt(p * (1 - p) / n + z2 / (4 * n * n)) / denom
    return max(0.0, min(p, centre - half)), min(1.0, max(p, centre + half))


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
    def from_trials(cls, case_id: str, verdicts: Iterable[str]) -> CaseCounts:
        """Count a sequence of per-trial verdicts."""
        return cls(case_id, Counter(verdicts))

    @property
    def n(self) -> int:
        """Graded trials: passes + fails."""
        return self.verdicts["pass"] + self.verdicts["fail"]

    @property
    def c(self) -> int:
        """Passing trials."""
        return self.verdicts["pass"]

    @property
    def unknown(self) -> int:
        """Trials whose verdict is ``unknown``."""
        return self.verdicts["unknown"]

    @property
    def unsupported(self) -> int:
        """Trials whose verdict is ``unsupported``."""
        return self.verdicts["unsupported"]

    @property
    def error(self) -> int:
        """Trials whose verdict is ``error``."""
        return self.verdicts["error"]


@dataclass(frozen=True, slots=True)
class CaseMetrics:
    """pass@k and pass^k of one case, keyed by k (empty when the case has no graded trial).

    Attributes:
        counts: The verdict counts the metrics come from.
        pass_at: pass@k per k.
        pass_hat: pass^k per k.
        pass1_ci: Wilson 95% interval of the pass rate, None when ``n == 0``.
    """

    counts: CaseCounts
    pass_at: Mapping[int, float]
    pass_hat: Mapping[int, float]
    pass1_ci: tuple[float, float] | None


def case_metrics(counts: CaseCounts, ks: Iterable[int] | None = None) -> CaseMetrics:
    """Compute pass@k and pass^k of one case.

    Args:
        counts: The case's verdict counts.
        ks: The k values wanted (default ``1..n``); those above ``n`` are left out,
            because the estimators are undefined there.

    Raises:
        ValueError: If some k is below 1.
    """
    n, c = counts.n, counts.c
    wanted = sorted(set(range(1, n + 1) if ks is None else ks))
    if wanted and wanted[0] < 1:
        raise ValueError(f"k must be >= 1 (got k={wanted[0]})")
    usable = [k for k in wanted if k <= n]
    return CaseMetrics(
        counts=counts,
        pass_at={k: pass_at_k(n, c, k) for k in usable},
        pass_hat={k: pass_hat_k(n, c, k) for k in usable},
        pass1_ci=wilson_interval(c, n) if n else None,
    )


@dataclass(frozen=True, slots=True)
class SuiteMetrics:
    """Per-k means over the cases of a suite.

    Attributes:
        cases: Metrics of every case, in input order.
        pass_at: Mean pass@k over the cases with ``n >= k``.
        pass_hat: Mean pass^k over the cases with ``n >= k``.
        cases_used: For each k in ``1..k_max``, how many cases entered the mean (a k with
            0 cases has no entry in ``pass_at``/``pass_hat``).
        excluded: Ids of the cases with no graded trial, left out of every mean.
        totals: Trials per verdict over the whole suite.
        pass1_ci: 95% interval of the mean pass^1 (= mean pass@1), None without graded cases.
    """

    cases: tuple[CaseMetrics, ...]
    pass_at: Mapping[int, float]
    pass_hat: Mapping[int, float]
    cases_used: Mapping[int, int]
    excluded: tuple[str, ...]
    totals: Mapping[str, int]
    pass1_ci: tuple[float, float] | None


def suite_metrics(cases: Iterable[CaseCounts], k_max: int | None = None) -> SuiteMetrics:
    """Average pass@k and pass^k over cases, with a 95% interval for the mean pass^1.

    Each case weighs the same whatever its trial count. The interval of the mean pass^1
    is the normal approximation ``mean ± 1.96·sd/√m`` over the m graded cases' pass
    rates (sd: sample standard deviation between cases), clipped to [0, 1]. It is
    deterministic, unlike a cluster bootstrap, and counts the case-to-case spread that
    a binomial interval on pooled trials would miss; it collapses to a point when every
    case has the same rate. With a single graded case, the Wilson interval of its
    trials is used instead.

    Args:
        cases: Verdict counts per case; case ids must be unique.
        k_max: Largest k reported (default: the largest ``n`` among the cases).

    Raises:
        ValueError: On duplicate case ids, or if ``k_max < 1``.
    """
    counts = tuple(cases)
    seen = Counter(cc.case_id for cc in counts)
    duplicates = sorted(cid for cid, times in seen.items() if times > 1)
    if duplicates:
        raise ValueError(f"duplicate case ids: {duplicates}")
    if k_max is not None and k_max < 1:
        raise ValueError(f"k_max must be >= 1 (got k_max={k_max})")
    top = max((cc.n for cc in counts), default=0) if k_max is None else k_max
    per_case = tuple(case_metrics(cc, range(1, top + 1)) for cc in counts)
    pass_at: dict[int, float] = {}
    pass_hat: dict[int, float] = {}
    used: dict[int, int] = {}
    for k in range(1, top + 1):
        having = [m for m in per_case if k in m.pass_at]
        used[k] = len(having)
        if having:
            pass_at[k] = math.fsum(m.pass_at[k] for m in having) / len(having)
            pass_hat[k] = math.fsum(m.pass_hat[k] for m in having) / len(having)
    graded = [cc for cc in counts if cc.n > 0]
    interval: tuple[float, float] | None = None
    if len(graded) == 1:
        interval = wilson_interval(graded[0].c, graded[0].n)
    elif graded:
        rates = [cc.c / cc.n for cc in graded]
        mean = math.fsum(rates) / len(rates)
        half = Z95 * statistics.stdev(rates) / math.sqrt(len(rates))
        interval = (max(0.0, mean - half), min(1.0, mean + half))
    return SuiteMetrics(
        cases=per_case,
        pass_at=pass_at,
        pass_hat=pass_hat,
        cases_used=used,
        excluded=tuple(cc.case_id for cc in counts if cc.n == 0),
        totals={v: sum(cc.verdicts[v] for cc in counts) for v in VERDICTS},
        pass1_ci=interval,
    )


def _fisher_exact(c1: int, n1: int, c2: int, n2: int) -> float:
    """Two-sided Fisher exact p-value of [[c1, n1-c1], [c2, n2-c2]], in exact integers."""
    s = c1 + c2
    weights = {
        x: math.comb(n1, x) * math.comb(n2, s - x) for x in range(max(0, s - n2), min(s, n1) + 1)
    }
    observed = weights[c1]
    return min(1.0, sum(w for w in weights.values() if w <= observed) / math.comb(n1 + n2, s))


def two_proportion_test(c1: int, n1: int, c2: int, n2: int) -> float:
    """Two-sided p-value that c1 passes of n1 graded trials and c2 of n2 share one pass rate.

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
        return _fisher_exact(c1, n1, c2, n2)
    se = math.sqrt(pooled * (1 - pooled) * (1 / n1 + 1 / n2))
    z = (c1 / n1 - c2 / n2) / se
    return math.erfc(abs(z) / math.sqrt(2))
