"""Grade a stored run's trials again with today's graders, and say what moved.

``regrade`` is review mode over a run already in the store: each trial's
cassette and recorded world delta are graded again (no agent runs, no tool is
called), and every verdict is compared with the one stored, grader by grader,
and with the human labels where there are any. A grader change that moves more
than ``max_drift`` of the verdicts is *drift*: ``replay regrade`` exits 1, so CI
blocks a change that silently moves scores. A refactor that changes no verdict
passes.

What is not the graders' to decide is held: a trial that could not be regraded
(its cassette gone, damaged, or cut short now when it was graded whole; its case
file gone) is skipped and listed, and the regrade is incomplete; a trial that
never had a cassette (it could not run) has nothing to grade again; a trial
whose stored verdict no grader gave (an ``error`` of cause
``limit``, ``user`` or ``harness``, or ``unsupported``) keeps that verdict, its
grades compared all the same. Without a judge the rubric is not judged again:
the stored judge grades are replayed as they were (``RubricJudge``).
"""

from __future__ import annotations

import dataclasses
import tempfile
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from recorder import ConfigError, ReplayError, __version__

from ..cases import Case, load_case
from ..graders import Cause, Dimension, Grade, Judge, Trial, Verdict, resolve
from ..modes import load_callable, review
from ..results import GradeRecord, Store, TrialRecord, calibrated_judges
from ._drift import Regrade, compare, human_verdicts
from ._runner import grader_pins
from ._spec import RunSpec
from ._work import record_of

MAX_DRIFT = 0.01
"""The share of verdicts a regrade may change before it fails (``--max-drift``)."""

_HELD_CAUSES = (Cause.LIMIT, Cause.USER, Cause.HARNESS)
"""Error causes no grader decides: a regrade keeps the stored verdict."""
_RUN_ONLY = ("replay",)
"""Graders whose verdict only the trial's own run could give (the calls it missed)."""


class _Stored:
    """The rubric's grades as stored: a regrade without a judge replays them."""

    def __init__(self, grades: Sequence[GradeRecord]) -> None:
        self._grades = [g for g in grades if g.grader.startswith("judge:")]

    def grade(self, trial: Trial, dimensions: list[Dimension], cassette: Path) -> list[Grade]:
        return [
            Grade(g.grader, g.verdict, g.evidence, g.score, g.veto, g.advisory, g.meta)
            for g in self._grades
        ]


def _cases(spec: RunSpec, given: Sequence[str | Path] | None) -> dict[str, Case]:
    paths = list(given) if given else list(spec.cases)
    cases: dict[str, Case] = {}
    for path in paths:
        if not Path(path).is_file():
            raise ConfigError(
                f"case file {path} of run {spec.name!r} is not there; give the case files "
                "as they are now (`replay regrade --case PATH`, or `cases=`)"
            )
        case = load_case(path)
        cases[case.id] = case
    return cases


def regrade(
    store: Store,
    run: str,
    *,
    graders: Sequence[str] = (),
    cases: Sequence[str | Path] | None = None,
    judge: Judge | None = None,
    max_drift: float = MAX_DRIFT,
    labels_only: bool = False,
    store_as: str | None = None,
) -> Regrade:
    """Grade ``run``'s stored trials again with today's graders and compare.

    Args:
        store: The results store.
        run: The run to regrade.
        graders: Graders added to every case's, besides those the run added.
        cases: The run's case files as they are now (default: the paths its spec stored).
        judge: Judge the rubric again with this judge (default: replay the stored grades);
            whether its grades count is decided as the run decided it (its spec's
            ``judge.min_labels`` and ``judge.min_agreement``, over the store's labels).
        max_drift: The share of verdicts allowed to change.
        labels_only: Regrade only trials people labelled (pass or fail, the whole trial).
        store_as: Store the regraded trials as a new run of this name, beside the original.

    Raises:
        ConfigError: No such run, a case file gone or malformed, the run's tools cannot be
            imported, ``store_as`` names a run that exists.
    """
    record = store.run(run)
    if record is None:
        raise ConfigError(f"no run {run!r} in {store.path}; see `replay runs`")
    if store_as is not None and store.run(store_as) is not None:
        raise ConfigError(f"run {store_as!r} exists in {store.path}: name a new one with store_as")
    spec = RunSpec.from_stored(dict(record.spec))
    by_id = _cases(spec, cases)
    tools = load_callable(spec.agent.tools) if spec.agent.tools else None
    if judge is not None:
        calibrated = calibrated_judges(store, spec.judge.min_labels, spec.judge.min_agreement)
        judge = dataclasses.replace(judge, calibrated=calibrated)
    every = [*spec.graders, *graders]
    for case in by_id.values():  # a misspelled grader is bad input, not a skipped trial
        resolve([*case.grader_uses, *every], strict=True)
    labels = human_verdicts(store.labels(run))
    stored = store.trials(run)
    if labels_only:
        stored = [t for t in stored if (t.case_id, t.idx) in labels]
        if not stored:
            raise ConfigError(f"run {run!r} has no trial labelled pass or fail: label some first")
    pairs: list[tuple[TrialRecord, TrialRecord]] = []
    skipped: list[tuple[str, str]] = []
    unrecorded: list[str] = []
    kept: list[TrialRecord] = []
    """Trials not regraded, stored as they were in a ``store_as`` run."""
    with tempfile.TemporaryDirectory(prefix="replay-regrade-") as tmp:
        for trial in stored:
            name = f"{trial.case_id}#{trial.idx}"
            if trial.cassette is None:  # (a trial that could not run: nothing to grade)
                unrecorded.append(name)
                kept.append(trial)
                continue
            why = _unreadable(trial, by_id)
            if why:
                skipped.append((name, why))
                kept.append(trial)
                continue
            try:
                result = review(
                    by_id[trial.case_id],
                    Path(str(trial.cassette)),
                    trial.idx,
                    prices={m: (float(p[0]), float(p[1])) for m, p in spec.llm.prices.items()},
                    judge=judge or _Stored(trial.grades),
                    judge_out=Path(tmp) / f"{len(pairs)}.judge.cassette",
                    tools=tools,
                    graders=every,
                )
            except ReplayError as exc:
                skipped.append((name, str(exc)))
                kept.append(trial)
                continue
            cut = result.trial.cassette.truncation
            if cut is not None:  # graded whole when stored: a part of it would move it
                skipped.append((name, f"its cassette {trial.cassette} is cut short ({cut})"))
                kept.append(trial)
                continue
            pairs.append((trial, _held(trial, record_of(result))))
    if store_as is not None:
        trials = [*(after for _, after in pairs), *kept]
        _store(store, record.pins, spec, store_as, run, every, list(by_id.values()), trials)
    moved = compare(run, pairs, labels, skipped, max_drift, labels_only, store_as)
    return dataclasses.replace(moved, unrecorded=tuple(unrecorded))


def _unreadable(trial: TrialRecord, cases: Mapping[str, Case]) -> str | None:
    if not Path(str(trial.cassette)).is_file():
        return f"its cassette {trial.cassette} is not there"
    if trial.case_id not in cases:
        return "its case is not among the run's case files"
    return None


def _held(before: TrialRecord, after: TrialRecord) -> TrialRecord:
    """The regraded record, keeping what no grader decided and where the trial was recorded.

    The calls offline replay could not answer are known only to the replay that met
    them: the stored ``replay`` grade stands in for the one review cannot give.
    """
    kept = tuple(g for g in before.grades if g.grader in _RUN_ONLY)
    after = dataclasses.replace(
        after,
        cassette=before.cassette,
        usage=before.usage,
        guards=before.guards,
        grades=(*kept, *(g for g in after.grades if g.grader not in _RUN_ONLY)),
    )
    if before.verdict is Verdict.UNSUPPORTED or before.cause in _HELD_CAUSES:
        return dataclasses.replace(
            after, verdict=before.verdict, cause=before.cause, cause_detail=before.cause_detail
        )
    return after


def _store(
    store: Store,
    pins: Mapping[str, Any],
    spec: RunSpec,
    name: str,
    source: str,
    graders: Sequence[str],
    cases: Sequence[Case],
    trials: Sequence[TrialRecord],
) -> None:
    regraded = dataclasses.replace(spec, name=name, graders=list(graders))
    new_pins = {
        **pins,
        "graders": grader_pins(regraded, cases),
        "grader_version": __version__,
        "regraded_from": source,
    }
    store.start_run(name, regraded.to_stored(), new_pins)
    for trial in trials:
        store.add_trial(name, trial)
    store.finish_run(name)


def regrade_golden(store: Store, **options: Any) -> list[Regrade]:
    """Regrade every golden run (``Store.set_golden``) against its labels.

    Raises:
        ConfigError: The store has no golden run; or as ``regrade``.
    """
    golden = store.golden_runs()
    if not golden:
        raise ConfigError(
            f"{store.path} has no golden run: mark a labelled run with `replay golden RUN`"
        )
    return [regrade(store, run, labels_only=True, **options) for run in golden]


def make_golden(store: Store, run: str, golden: bool = True) -> int:
    """Mark ``run`` as part of the graders' gold standard (or, False, no longer).

    Returns the number of its trials people labelled pass or fail.

    Raises:
        ConfigError: No such run, or (to mark it) none of its trials is labelled.
    """
    labelled = len(human_verdicts(store.labels(run))) if store.run(run) is not None else 0
    if golden and store.run(run) is not None and not labelled:
        raise ConfigError(
            f"run {run!r} has no trial labelled pass or fail: a golden run is a labelled one "
            f"(label with `replay label {run} CASE#INDEX pass|fail` or `replay sample {run}`)"
        )
    store.set_golden(run, golden)
    return labelled
