"""Two runs of the same cases compared, paired by case.

Per case an exact test under a false discovery rate; for the suite, the paired change of
pass^1 and pass^k with its interval and the smallest change the runs could detect.
"""

from __future__ import annotations

import math
import statistics
from collections.abc import Sequence
from dataclasses import dataclass, replace
from typing import Literal

from recorder import ConfigError

from ._metrics import CONFIDENCE, CaseCounts, pass_hat_k
from ._record import TrialRecord
from ._stats import (
    Interval,
    benjamini_hochberg,
    case_interval,
    detectable,
    fisher_exact,
    normal_quantile,
    paired_interval,
    t_quantile,
)
from ._store import Store
from ._summaries import CaseSummary

FDR = 0.1
"""The default false discovery rate when marking cases better or worse (``--fdr``)."""
POWER = 0.8
"""The default power at which the smallest detectable change is stated (``--power``)."""


@dataclass(frozen=True, slots=True)
class CaseChange:
    """One case in two runs."""

    case_id: str
    a: CaseCounts
    b: CaseCounts
    pass1_a: float | None
    pass1_b: float | None
    pass_k: tuple[int, float | None, float | None] | None
    """(k, A's pass^k, B's pass^k) at the largest k both runs reach."""
    p_value: float | None
    """Fisher's exact test of A's and B's pass rates for this case (trials of one case
    are independent given the case); None unless both runs graded a trial of it."""
    newly_failing: bool
    """Whether a trial of B failed (verdict ``fail``, or an ``error`` of cause ``agent`` or
    ``limit``: the agent raised or ran past a limit, as ``ExitCode.of_verdicts`` rules)
    where A's trials of the case passed (one at least, and none failed so), or where A
    has none (the case is new in B). Trials nobody could judge (``unsupported``,
    ``unknown``, errors of other causes) neither fail nor pass here."""
    failing_cassette: str | None
    """A failing trial of B, to read first (else one that did not pass)."""
    q_value: float | None = None
    """The p-value adjusted for testing every case (Benjamini-Hochberg)."""
    direction: Literal["better", "worse"] | None = None
    """Set when the change is a discovery at the comparison's false discovery rate."""

    @property
    def change(self) -> float | None:
        """B's pass^1 minus A's."""
        if self.pass1_a is None or self.pass1_b is None:
            return None
        return self.pass1_b - self.pass1_a

    @property
    def significant(self) -> bool:
        """Whether the change is larger than noise, at the comparison's false discovery rate."""
        return self.direction is not None


@dataclass(frozen=True, slots=True)
class PairedFigure:
    """A suite figure in both runs over the cases both graded, and its paired change."""

    name: str
    """``pass^1`` or ``pass^K``."""
    k: int
    cases: int
    """The cases both runs graded at least k trials of: the pairs the figure rests on."""
    a: float
    b: float
    interval: Interval
    """The interval of ``b - a`` (the change) at the comparison's confidence."""
    detectable: float
    """The smallest true change these runs detect at the comparison's power (two-sided
    test at its confidence): a smaller one may pass unseen."""

    @property
    def change(self) -> float:
        """B minus A."""
        return self.b - self.a

    @property
    def drop(self) -> float:
        """A minus B: how far B fell."""
        return self.a - self.b

    @property
    def drop_interval(self) -> Interval:
        """The interval of the drop (A minus B)."""
        return Interval(-self.interval.high, -self.interval.low)


@dataclass(frozen=True, slots=True)
class RunComparison:
    """Run B against run A, paired by case (``compare_runs``)."""

    a: str
    b: str
    changes: list[CaseChange]
    """Every case of either run, by id."""
    only_a: tuple[str, ...]
    """Cases in A alone (no pair: out of the paired figures)."""
    only_b: tuple[str, ...]
    """Cases in B alone."""
    pass1: PairedFigure | None
    """pass^1 over the cases both runs graded (None without one; with one, that case's
    own two samples of trials)."""
    pass_k: PairedFigure | None
    """pass^k at the comparison's k (None when k is 1 or too few cases reach it)."""
    confidence: float
    power: float
    fdr: float
    trials: int
    """Graded trials per case in the pairs (the median of the smaller of each pair)."""

    @property
    def figures(self) -> list[PairedFigure]:
        """pass^1, then pass^k, those there are."""
        return [f for f in (self.pass1, self.pass_k) if f is not None]


def compare_runs(
    store: Store,
    a: str,
    b: str,
    *,
    confidence: float = CONFIDENCE,
    fdr: float = FDR,
    power: float = POWER,
    k: int | None = None,
) -> RunComparison:
    """Compare run B with run A case by case, paired: what ``replay diff`` and ``gate`` read.

    Per case: Fisher's exact test of the two pass rates; a case is marked better or
    worse when its Benjamini-Hochberg q-value is at most ``fdr``. For the suite: pass^1
    and pass^k over the cases both runs graded, each with the interval of its paired
    change (``paired_interval``) and the smallest change these runs could detect.

    Args:
        store: The results store holding both runs.
        a: The baseline run.
        b: The candidate run.
        confidence: The intervals' confidence level.
        fdr: The false discovery rate for marking cases.
        power: The power at which the detectable change is stated.
        k: The pass^k compared besides pass^1 (default: the most trials every pair has).

    Raises:
        ConfigError: A run is not in the store.
        ValueError: ``confidence``, ``fdr`` or ``power`` is outside (0, 1), or ``k < 1``.
    """
    cases_a, cases_b = _summaries(store, a), _summaries(store, b)
    # A case's cassette to read first: a trial of B the agent failed, else one not passed.
    to_read = dict(store.first_cassettes(b))
    to_read.update(store.first_cassettes(b, failed=True))
    changes = [
        _case_change(case_id, cases_a.get(case_id), cases_b.get(case_id), to_read.get(case_id))
        for case_id in sorted(set(cases_a) | set(cases_b))
    ]
    return _compare(a, b, changes, set(cases_a), set(cases_b), confidence, fdr, power, k)


def _summaries(store: Store, name: str) -> dict[str, CaseSummary]:
    """A run's cases as the store counts them, by id.

    Raises:
        ConfigError: No such run in the store (the message lists those there are).
    """
    if store.run(name) is None:
        known = ", ".join(store.runs()) or "none"
        raise ConfigError(f"no run {name!r} in {store.path} (runs: {known})")
    return {case.case_id: case for case in store.case_summaries(name)}


def compare_counts(
    a: Sequence[CaseCounts],
    b: Sequence[CaseCounts],
    *,
    names: tuple[str, str] = ("A", "B"),
    confidence: float = CONFIDENCE,
    fdr: float = FDR,
    power: float = POWER,
    k: int | None = None,
) -> RunComparison:
    """``compare_runs`` on verdict counts per case, with no store (cases paired by id).

    A case newly fails in B when a trial of it failed there and A's passed (one at least,
    none failed) or A lacks the case; with counts alone, an ``error`` never counts as
    failing (its cause is unknown). No case carries a cassette to read.

    Raises:
        ValueError: As ``compare_runs``, or a run repeats a case id.
    """
    by_a, by_b = _unique(a), _unique(b)
    changes = []
    for case_id in sorted(set(by_a) | set(by_b)):
        counts_a = by_a.get(case_id, CaseCounts(case_id, {}))
        counts_b = by_b.get(case_id, CaseCounts(case_id, {}))
        held = counts_a.c > 0 and not counts_a.fail
        newly = counts_b.fail > 0 and (held or case_id not in by_a)
        changes.append(_counted(case_id, counts_a, counts_b, newly, None))
    return _compare(*names, changes, set(by_a), set(by_b), confidence, fdr, power, k)


def _unique(counts: Sequence[CaseCounts]) -> dict[str, CaseCounts]:
    out = {c.case_id: c for c in counts}
    if len(out) != len(counts):
        raise ValueError("a run lists a case id twice")
    return out


def _compare(
    a: str,
    b: str,
    changes: list[CaseChange],
    in_a: set[str],
    in_b: set[str],
    confidence: float,
    fdr: float,
    power: float,
    k: int | None,
) -> RunComparison:
    """Mark the changes under the false discovery rate; the suite's paired figures."""
    if not 0.0 < fdr < 1.0:
        raise ValueError(f"fdr must be between 0 and 1 (got {fdr})")
    if k is not None and k < 1:
        raise ValueError(f"k must be >= 1 (got {k})")
    tested = [c for c in changes if c.p_value is not None]
    q_values = dict(
        zip(
            (c.case_id for c in tested),
            benjamini_hochberg([c.p_value for c in tested if c.p_value is not None]),
            strict=True,
        )
    )
    marked = []
    for change in changes:
        q = q_values.get(change.case_id)
        direction: Literal["better", "worse"] | None = None
        if q is not None and q <= fdr and (change.change or 0) != 0:
            direction = "better" if (change.change or 0) > 0 else "worse"
        marked.append(replace(change, q_value=q, direction=direction))
    pairs = [c for c in marked if c.a.n and c.b.n]
    top = min((min(c.a.n, c.b.n) for c in pairs), default=1) if k is None else k
    trials = int(statistics.median(min(c.a.n, c.b.n) for c in pairs)) if pairs else 0
    return RunComparison(
        a=a,
        b=b,
        changes=marked,
        only_a=tuple(c.case_id for c in marked if c.case_id not in in_b),
        only_b=tuple(c.case_id for c in marked if c.case_id not in in_a),
        pass1=_figure(pairs, 1, confidence, power),
        pass_k=_figure(pairs, top, confidence, power) if top > 1 else None,
        confidence=confidence,
        power=power,
        fdr=fdr,
        trials=trials,
    )


def diff_runs(store: Store, a: str, b: str, *, fdr: float = FDR) -> list[CaseChange]:
    """Compare two stored runs case by case (``compare_runs(...).changes``)."""
    return compare_runs(store, a, b, fdr=fdr).changes


def _figure(
    pairs: list[CaseChange], k: int, confidence: float, power: float
) -> PairedFigure | None:
    """pass^k of A and B over the pairs graded k times in both, and its paired change."""
    usable = [c for c in pairs if c.a.n >= k and c.b.n >= k]
    if not usable:
        return None
    if len(usable) == 1:
        return _one_case(usable[0], k, confidence, power)
    values_a = [pass_hat_k(c.a.n, c.a.c, k) for c in usable]
    values_b = [pass_hat_k(c.b.n, c.b.c, k) for c in usable]
    interval = paired_interval(values_a, values_b, confidence)
    # The interval's width gives the standard error it implies (MOVER is not t-based but
    # close to it; its lopsided ends averaged): the detectable change follows from it.
    t = t_quantile(1 - (1 - confidence) / 2, len(usable) - 1)
    se = (interval.high - interval.low) / (2 * t)
    return PairedFigure(
        name=f"pass^{k}",
        k=k,
        cases=len(usable),
        a=math.fsum(values_a) / len(usable),
        b=math.fsum(values_b) / len(usable),
        interval=interval,
        detectable=detectable(se, confidence, power, len(usable) - 1),
    )


def _one_case(case: CaseChange, k: int, confidence: float, power: float) -> PairedFigure:
    """One case in both runs: its own trials, two samples (Newcombe's hybrid score interval).

    A suite of one case says nothing of other cases: the figure is this case's, from the
    Wilson intervals of its two pass rates (mapped to pass^k), as ``suite_metrics`` does.
    """
    a, b = case.a, case.b
    value_a, value_b = pass_hat_k(a.n, a.c, k), pass_hat_k(b.n, b.c, k)
    low_a, high_a = case_interval(a.c, a.n, k, confidence=confidence)
    low_b, high_b = case_interval(b.c, b.n, k, confidence=confidence)
    change = value_b - value_a
    interval = Interval(
        change - math.hypot(value_b - low_b, high_a - value_a),
        change + math.hypot(high_b - value_b, value_a - low_a),
    )
    se = (interval.high - interval.low) / (2 * normal_quantile(1 - (1 - confidence) / 2))
    return PairedFigure(
        name=f"pass^{k}",
        k=k,
        cases=1,
        a=value_a,
        b=value_b,
        interval=interval,
        detectable=detectable(se, confidence, power, math.inf),
    )


def _case_change(
    case_id: str, a: CaseSummary | None, b: CaseSummary | None, failing: str | None
) -> CaseChange:
    counts_a, counts_b = _counts(case_id, a), _counts(case_id, b)
    failed_b = b is not None and b.failed > 0
    held = counts_a.c > 0 and a is not None and not a.failed
    newly = failed_b and (held or a is None)
    return _counted(case_id, counts_a, counts_b, newly, failing)


def _counts(case_id: str, case: CaseSummary | None) -> CaseCounts:
    verdicts = case.verdicts if case is not None else {}
    return CaseCounts(case_id, {v.value: n for v, n in verdicts.items()})


def _counted(
    case_id: str, a: CaseCounts, b: CaseCounts, newly: bool, failing: str | None
) -> CaseChange:
    """A case's change from its counts in both runs: pass rates, pass^k, Fisher's p."""
    k = min(a.n, b.n)
    pass_k = (k, pass_hat_k(a.n, a.c, k), pass_hat_k(b.n, b.c, k)) if k > 1 else None
    p_value = fisher_exact(a.c, a.n, b.c, b.n) if a.n and b.n else None
    return CaseChange(
        case_id,
        a,
        b,
        a.c / a.n if a.n else None,
        b.c / b.n if b.n else None,
        pass_k,
        p_value,
        newly,
        failing,
    )


def trials_by_case(store: Store, name: str) -> dict[str, list[TrialRecord]]:
    """A run's trials grouped by case, in the store's order.

    Raises:
        ConfigError: No such run in the store (the message lists those there are).
    """
    if store.run(name) is None:
        known = ", ".join(store.runs()) or "none"
        raise ConfigError(f"no run {name!r} in {store.path} (runs: {known})")
    out: dict[str, list[TrialRecord]] = {}
    for trial in store.trials(name):
        out.setdefault(trial.case_id, []).append(trial)
    return out
