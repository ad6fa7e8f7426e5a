"""Why trials did not pass: one primary cause per trial, grouped (``RunReport.causes``)."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

from ._record import FailureCause, PartialCredit, TrialRecord


@dataclass(frozen=True, slots=True)
class FailedTrial:
    """One trial that did not pass, under its primary cause."""

    case_id: str
    idx: int
    """The trial's index in its case (``replay label RUN CASE#IDX``)."""
    cause: FailureCause
    detail: str
    """The first line of what says so (``grader: evidence`` or ``cause: detail``); may be empty."""
    cassette: str | None
    credit: PartialCredit | None = None
    """Its partial credit, when it records one (``TrialRecord.partial_credit``)."""


@dataclass(frozen=True, slots=True)
class CauseGroup:
    """The trials of a run that share a primary cause."""

    cause: FailureCause
    trials: tuple[FailedTrial, ...]
    """By case id and index."""

    @property
    def name(self) -> str:
        """The cause as reports print it (``assertion failed``...)."""
        return self.cause.value

    @property
    def count(self) -> int:
        """How many trials."""
        return len(self.trials)


def cause_groups(trials: Iterable[TrialRecord]) -> list[CauseGroup]:
    """Every failure cause, in ``FailureCause`` order, with the trials it is primary for.

    Causes no trial had are there too, empty (``count`` 0).
    """
    failed = []
    for trial in trials:
        why = trial.why_not_passed
        if why is not None:
            cause, detail = why
            failed.append(
                FailedTrial(
                    trial.case_id, trial.idx, cause, detail, trial.cassette, trial.partial_credit
                )
            )
    return grouped(failed)


def grouped(failed: Iterable[FailedTrial], *, ordered: bool = False) -> list[CauseGroup]:
    """``cause_groups`` of the trials that did not pass, given as ``FailedTrial``s.

    Args:
        failed: The trials.
        ordered: They come by case id and index already.
    """
    by_cause: dict[FailureCause, list[FailedTrial]] = {cause: [] for cause in FailureCause}
    for trial in failed:
        by_cause[trial.cause].append(trial)
    if ordered:
        return [CauseGroup(cause, tuple(rows)) for cause, rows in by_cause.items()]
    return [
        CauseGroup(cause, tuple(sorted(rows, key=lambda t: (t.case_id, t.idx))))
        for cause, rows in by_cause.items()
    ]
