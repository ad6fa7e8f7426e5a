"""The CI gate: does a candidate run hold under thresholds, against a baseline or on its own?"""

from __future__ import annotations

import math
from collections.abc import Collection, Mapping
from dataclasses import dataclass, field
from typing import Any, NamedTuple

from recorder import ConfigError

from ..graders import Verdict
from ._metrics import CONFIDENCE, VERDICTS, CaseCounts, case_metrics
from ._paired import FDR, POWER, CaseChange, PairedFigure, RunComparison, compare_runs
from ._pins import comparable
from ._record import RunRecord
from ._report import CaseReport, build_report, no_run
from ._store import Store


@dataclass(frozen=True)
class Thresholds:
    """What the candidate must meet. None: not checked."""

    min_pass1: float | None = None
    min_pass_k: tuple[int, float] | None = None
    """(k, minimum suite pass^k)."""
    max_drop: float | None = None
    """Largest allowed fall of suite pass^1 from the baseline, paired by case: the gate
    holds when the interval's upper bound on the drop is within it."""
    critical_tag: str = "critical"
    """Cases with this tag may not newly fail."""
    max_unsupported: float | None = None
    """Largest allowed share of unsupported and error trials in the candidate."""
    max_failing_critical: int | None = None
    """Most cases with the critical tag allowed a trial that does not pass (0: every
    trial of every critical case passes); needs no baseline."""
    confidence: float = CONFIDENCE
    """The confidence of the drop's interval."""
    power: float = POWER
    """The power at which the smallest detectable drop is stated."""
    allow_underpowered: bool = False
    """Decide a drop the runs cannot settle by the interval alone (it fails then)
    instead of answering "cannot decide"."""
    fdr: float = FDR
    """The false discovery rate at which cases are marked worse."""

    def absolute(self) -> list[str]:
        """The thresholds given that need no baseline (the candidate alone), as options."""
        given = {
            "--min-pass1": self.min_pass1,
            "--min-pass-k": self.min_pass_k,
            "--max-unsupported": self.max_unsupported,
            "--max-failing-critical": self.max_failing_critical,
        }
        return [option for option, value in given.items() if value is not None]


class GateCheck(NamedTuple):
    """One threshold of the gate."""

    holds: bool
    text: str
    """What was compared, with the candidate's value: ``suite pass^1 0.750 >= 0.9``."""
    name: str
    """The check without the candidate's value, the same from run to run (a JUnit testcase)."""
    cases: tuple[str, ...] = ()
    """The cases the check counts against it: critical cases newly failing, critical cases
    with a trial not passing, cases worse beyond noise (``--max-drop``). When the check
    does not hold, their JUnit testcases fail with it."""
    undecided: bool = False
    """The check does not hold because the runs cannot settle it (too few cases or
    trials for the drop asked): ``replay gate`` exits 3, not 1."""


@dataclass(frozen=True)
class GateResult:
    """The gate's verdict with its reasons."""

    holds: bool
    checks: list[GateCheck]
    """Each threshold: whether it held, and what was compared."""
    notes: list[str] = field(default_factory=list)
    changes: list[CaseChange] = field(default_factory=list)
    """Each case in both runs (with a baseline)."""
    comparison: RunComparison | None = None
    """The paired comparison of the two runs (with a baseline)."""
    source: tuple[Store, str] | None = field(default=None, repr=False, compare=False)
    """The store and the candidate, when there was no baseline (where ``cases`` come from)."""
    _cases: list[CaseReport] | None = field(default=None, repr=False, compare=False)

    @property
    def cases(self) -> list[CaseReport]:
        """Each case of the candidate, when there was no baseline (``changes`` is then empty).

        Its report's (``build_report``), made when first asked for: the gate itself reads
        the store's per-case summaries alone.
        """
        if self._cases is None:
            found = build_report(*self.source).cases if self.source is not None else []
            object.__setattr__(self, "_cases", found)
        return self._cases  # type: ignore[return-value]

    @property
    def undecided(self) -> bool:
        """Whether the gate does not hold only because a check could not be decided."""
        failing = [c for c in self.checks if not c.holds]
        return bool(failing) and all(c.undecided for c in failing)


def gate(
    store: Store,
    baseline: str | None,
    candidate: str,
    thresholds: Thresholds,
    *,
    vary: tuple[str, ...] = (),
    strict_pins: bool = False,
) -> GateResult:
    """Check ``candidate`` against ``baseline``, or on its own when ``baseline`` is None.

    With a baseline, no case with the critical tag may newly fail, besides the
    thresholds given. Without one, only the thresholds that need none are
    checked (``Thresholds.absolute``: minimum pass^1 and pass^k, the largest
    unsupported share, critical cases failing), and at least one must be given.

    Raises:
        ConfigError: A run is missing, not finished (``replay run --resume``
            finishes it) or holds no trial; the pins differ beyond the variable
            under test (``vary``; by default any one of ``VARIABLE_PINS``; the
            ``NOTED_PINS`` only with ``strict_pins``, else a note says so);
            without a baseline, ``max_drop`` is given, or no threshold is.
    """
    if baseline is None:
        return _absolute(store, candidate, thresholds)
    runs = {name: store.run(name) for name in (baseline, candidate)}
    for name, run in runs.items():
        if run is None:
            raise ConfigError(f"no run {name!r} in {store.path}")
        _check_complete(store, name, run)
    noted = comparable(runs[baseline].pins, runs[candidate].pins, vary, strict_pins)  # type: ignore[union-attr]
    if isinstance(noted, str):
        raise ConfigError(f"runs {baseline!r} and {candidate!r} {noted}")
    comparison = compare_runs(
        store,
        baseline,
        candidate,
        confidence=thresholds.confidence,
        fdr=thresholds.fdr,
        power=thresholds.power,
    )
    only_a = set(comparison.only_a)  # (the candidate's cases, as the comparison counted them)
    counts = [c.b for c in comparison.changes if c.case_id not in only_a]
    cand = _Candidate(candidate, counts, dict(store.case_tags(candidate)))
    changes = comparison.changes
    checks = _pass_checks(cand, thresholds)
    worse = tuple(c.case_id for c in changes if c.direction == "worse")
    if thresholds.max_drop is not None:
        checks.append(_drop_check(comparison, thresholds, worse))
    tag = thresholds.critical_tag
    critical = {c.case_id for c in cand.cases if tag in cand.tags.get(c.case_id, ())}
    fallen = [c.case_id for c in changes if c.newly_failing and c.case_id in critical]
    name = f"no {tag} case newly fails"
    shown = name + (f" (newly failing: {', '.join(fallen)})" if fallen else _none(tag, critical))
    checks.append(GateCheck(not fallen, shown, name, tuple(fallen)))
    checks += _share_checks(cand, thresholds)
    notes = (
        [f"cases worse beyond noise (FDR {thresholds.fdr}): {', '.join(worse)}"] if worse else []
    )
    if comparison.only_a or comparison.only_b:
        notes.append(_unpaired(comparison))
    notes += [
        f"the runs differ in {k} ({v}): noted, not blocking (--strict-pins)"
        for k, v in noted.items()
    ]
    holds = all(c.holds for c in checks)
    return GateResult(holds, checks, notes, changes, comparison=comparison)


def _unpaired(comparison: RunComparison) -> str:
    parts = []
    if comparison.only_a:
        parts.append(f"in {comparison.a} only: {', '.join(comparison.only_a)}")
    if comparison.only_b:
        parts.append(f"in {comparison.b} only: {', '.join(comparison.only_b)}")
    return f"cases out of the paired figures ({'; '.join(parts)})"


def _points(value: float) -> str:
    """A difference of rates in points: 0.12 -> ``12 points``."""
    points = value * 100
    shown = f"{points:.0f}" if points >= 9.5 else f"{points:.1f}".rstrip("0").rstrip(".")
    return f"{shown} point{'' if shown == '1' else 's'}"


def _needed_cases(figure: PairedFigure, detect: float) -> int:
    """About how many cases, at the same trials per case, detect a drop of ``detect``.

    The detectable drop shrinks as one over the square root of the cases.
    """
    return max(figure.cases + 1, math.ceil(figure.cases * (figure.detectable / detect) ** 2))


def _drop_check(
    comparison: RunComparison, thresholds: Thresholds, worse: tuple[str, ...]
) -> GateCheck:
    """``--max-drop``: holds when the interval's bound on the paired drop is within it.

    Fails when the drop is real (its interval above 0) and not shown within the bound;
    otherwise the runs cannot settle it: undecided (exit 3), with the smallest drop they
    detect and the cases a decision needs, unless ``allow_underpowered`` (fails then).
    """
    most, figure = thresholds.max_drop, comparison.pass1
    assert most is not None
    name = f"pass^1 drop <= {most}"
    level = f"{thresholds.confidence:.0%}"
    if figure is None:
        text = f"pass^1 drop: no case graded in both runs, nothing to bound ({name})"
        return GateCheck(False, text, name, worse, undecided=not thresholds.allow_underpowered)
    low, high = figure.drop_interval
    shown = (
        f"pass^1 drop {figure.drop:.3f} ({figure.a:.3f} -> {figure.b:.3f}), {level} interval "
        f"[{low:.3f}, {high:.3f}] over {figure.cases} case{'' if figure.cases == 1 else 's'}"
    )
    power = f"these runs can detect a drop of {_points(figure.detectable)} or more"
    if high <= most:
        return GateCheck(True, f"{shown}: within {most} ({power})", name)
    if low > 0:
        return GateCheck(False, f"{shown}: a real drop, not shown within {most}", name, worse)
    if most <= 0:
        why = (
            f"cannot decide: no number of cases shows a drop of at most {most} ({power}); "
            "give the largest drop you accept, e.g. --max-drop 0.05"
        )
        return GateCheck(
            False, f"{shown}: {why}", name, worse, undecided=not thresholds.allow_underpowered
        )
    need = f"about {_needed_cases(figure, most)} cases x {comparison.trials} trials"
    if figure.detectable > most:
        why = f"cannot decide: {power}; --max-drop {most} needs {need}"
    else:
        why = (
            f"cannot decide: the interval reaches past {most} and the drop is not shown "
            f"to be real; {need} would settle it"
        )
    if thresholds.allow_underpowered:
        return GateCheck(False, f"{shown}: not shown within {most} ({why})", name, worse)
    return GateCheck(False, f"{shown}: {why}", name, worse, undecided=True)


def _absolute(store: Store, candidate: str, thresholds: Thresholds) -> GateResult:
    """The gate without a baseline: the thresholds on the candidate alone."""
    if thresholds.max_drop is not None:
        raise ConfigError("--max-drop is a fall from a baseline: give --baseline RUN too")
    if not thresholds.absolute():
        raise ConfigError(
            "a gate without --baseline needs a threshold on the candidate: give --min-pass1, "
            "--min-pass-k K=VALUE, --max-unsupported or --max-failing-critical "
            "(or --baseline RUN to compare with)"
        )
    run = store.run(candidate)
    if run is None:
        raise no_run(store, candidate)
    _check_complete(store, candidate, run)
    counts = [  # (as the store counted them: no trial is read)
        CaseCounts(s.case_id, {v.value: n for v, n in s.verdicts.items()})
        for s in store.case_summaries(candidate)
    ]
    cand = _Candidate(candidate, counts, dict(store.case_tags(candidate)))
    checks = [*_pass_checks(cand, thresholds), *_share_checks(cand, thresholds)]
    return GateResult(all(c.holds for c in checks), checks, source=(store, candidate))


@dataclass(frozen=True)
class _Candidate:
    """What the gate reads of the candidate: its cases' counts (as the store keeps them), tags."""

    name: str
    cases: list[CaseCounts]
    tags: dict[str, tuple[str, ...]]

    def pass_hat(self, k: int) -> float | None:
        """The suite's pass^k, as ``suite_metrics`` gives it (None: no case reaches k).

        Only the k asked is computed: a 1,000-case run's every k and interval is not.
        """
        hats = [case_metrics(c, [k]).pass_hat[k] for c in self.cases if c.n >= k]
        return math.fsum(hats) / len(hats) if hats else None

    @property
    def totals(self) -> dict[str, int]:
        """Trials per verdict over the cases."""
        return {v: sum(c.verdicts[v] for c in self.cases) for v in VERDICTS}


def _pass_checks(cand: _Candidate, thresholds: Thresholds) -> list[GateCheck]:
    """The candidate's suite pass^1 and pass^k against their minimums."""
    checks = []
    if thresholds.min_pass1 is not None:
        pass1 = cand.pass_hat(1)
        ok = pass1 is not None and pass1 >= thresholds.min_pass1
        text = f"suite pass^1 {_num(pass1)} >= {thresholds.min_pass1}"
        checks.append(GateCheck(ok, text, f"suite pass^1 >= {thresholds.min_pass1}"))
    if thresholds.min_pass_k is not None:
        k, minimum = thresholds.min_pass_k
        value = cand.pass_hat(k) if k >= 1 else None
        checks.append(
            GateCheck(
                value is not None and value >= minimum,
                f"suite pass^{k} {_num(value)} >= {minimum}",
                f"suite pass^{k} >= {minimum}",
            )
        )
    return checks


def _share_checks(cand: _Candidate, thresholds: Thresholds) -> list[GateCheck]:
    """The candidate's critical cases failing and its unsupported share, against their caps."""
    checks = []
    if thresholds.max_failing_critical is not None:
        tag, most = thresholds.critical_tag, thresholds.max_failing_critical
        tagged = [c for c in cand.cases if tag in cand.tags.get(c.case_id, ())]
        failing = [c.case_id for c in tagged if not _all_pass(c)]
        name = f"{tag} cases with a trial not passing <= {most}"
        shown = f"{tag} cases with a trial not passing {len(failing)} <= {most}"
        shown += f" (failing: {', '.join(failing)})" if failing else _none(tag, tagged)
        checks.append(GateCheck(len(failing) <= most, shown, name, tuple(failing)))
    if thresholds.max_unsupported is not None:
        totals = cand.totals
        trials = sum(totals.values())
        unjudged = totals.get(Verdict.UNSUPPORTED, 0) + totals.get(Verdict.ERROR, 0)
        share = unjudged / trials if trials else 0.0
        checks.append(
            GateCheck(
                share <= thresholds.max_unsupported,
                f"unsupported + error share {share:.3f} <= {thresholds.max_unsupported}",
                f"unsupported + error share <= {thresholds.max_unsupported}",
            )
        )
    return checks


def _none(tag: str, tagged: Collection[object]) -> str:
    """The note that no case carries the tag (a check on them holds then, vacuously)."""
    return "" if tagged else f" (0 {tag} cases in the run)"


def _check_complete(store: Store, name: str, run: RunRecord) -> None:
    """Refuse a run that is not finished, or holds no trial: a gate on it would hold on nothing."""
    stored = store.trial_count(name)
    if run.finished is None:
        planned = _planned(run.spec)
        of = f"{stored} of {planned}" if planned is not None and planned >= stored else stored
        raise ConfigError(
            f"run {name!r} is not finished ({of} trials): finish it with "
            f"`replay run --resume --run {name} --store {store.path}`"
        )
    if not stored:
        raise ConfigError(f"run {name!r} has no trials in {store.path}: there is nothing to gate")


def _planned(spec: Mapping[str, Any]) -> int | None:
    """The trials a run's spec asks for (None: one per recorded cassette, or not a run's spec)."""
    from ..modes import REGISTRY

    mode = REGISTRY.get(str(spec.get("mode")))
    cases, trials = spec.get("cases"), spec.get("trials")
    if mode is None or mode.per_recording or not isinstance(cases, list):
        return None
    return len(cases) * trials if isinstance(trials, int) else None


def _all_pass(counts: CaseCounts) -> bool:
    """Whether every trial of the case passed (an error or unsupported one does not)."""
    return counts.c == sum(counts.verdicts.values())


def _num(value: float | None) -> str:
    return "-" if value is None else f"{value:.3f}"
