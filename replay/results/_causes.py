"""Why trials did not pass: one primary cause per trial, grouped (``RunReport.causes``)."""

from __future__ import annotations

import enum
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass

from ..graders import Cause
from ._store import GradeRow, TrialRow


class FailureCause(str, enum.Enum):
    """Why a trial did not pass; the members are in the order reports list them.

    Each trial that did not pass has exactly one, its *primary* cause: the one that made
    its verdict (see ``primary_cause``).
    """

    ASSERTION = "assertion failed"
    """A ``fail``: a grade failed that vetoes nothing (the case's assertions, the reference
    solution, the rule grader's must-call, loop and budget checks, a judge's ``fail``, a
    registered grader)."""
    RULE_VETO = "rule veto"
    """A ``fail``: a vetoing grade failed (a forbidden tool was called, a write outside the
    allowed tables), whatever the other grades said."""
    JUDGE_UNKNOWN = "judge unknown"
    """An ``unknown``: the judge (or another grader) could not tell."""
    AGENT_ERROR = "agent error"
    """An ``error`` of cause ``agent``: the agent raised."""
    TIMEOUT = "timeout"
    """An ``error`` of cause ``limit`` whose deadline fired (guard ``timeout``)."""
    LIMIT = "limit"
    """An ``error`` of cause ``limit``, another limit: memory, LLM tokens, a tool result's size."""
    SANDBOX = "sandbox violation"
    """A ``fail``: the agent reached for what the sandbox does not allow (the ``sandbox``
    grader's veto)."""
    UNSUPPORTED = "unsupported"
    """An ``unsupported``: offline replay met a call the cassette cannot answer."""
    INFRASTRUCTURE = "infrastructure"
    """An ``error`` that is not the agent's: the harness (cause ``harness``), a third-party
    MCP server (``server``), the simulated user (``user``), or a grader that raised."""


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


_ERRORS: Mapping[str, FailureCause] = {
    Cause.AGENT.value: FailureCause.AGENT_ERROR,
    Cause.LIMIT.value: FailureCause.LIMIT,
    Cause.HARNESS.value: FailureCause.INFRASTRUCTURE,
    Cause.SERVER.value: FailureCause.INFRASTRUCTURE,
    Cause.USER.value: FailureCause.INFRASTRUCTURE,
}
"""An ``error`` trial's cause column, as a failure cause (none: a grader raised)."""


def primary_cause(trial: TrialRow, grades: Sequence[GradeRow]) -> FailureCause | None:
    """The one cause of a trial that did not pass (None for a pass).

    The cause is what made the verdict, so the groups split the trials that did not pass
    by verdict: an ``error`` goes by its cause column (a limit by the guard that fired,
    ``timeout`` before the others; no cause: a grader raised, ``infrastructure``) and
    never by the assertions it broke on the way; ``unsupported`` and ``unknown`` are
    their own; a ``fail`` takes its worst failing grade: a sandbox violation, then
    another veto, then any other failed grade (``assertion failed``). Advisory grades
    count for nothing, as in the verdict.
    """
    verdict = trial["verdict"]
    if verdict == "pass":
        return None
    if verdict == "error":
        if trial["cause"] == Cause.LIMIT.value and "timeout" in trial["guards"]:
            return FailureCause.TIMEOUT
        return _ERRORS.get(trial["cause"] or "", FailureCause.INFRASTRUCTURE)
    if verdict == "unsupported":
        return FailureCause.UNSUPPORTED
    if verdict == "unknown":
        return FailureCause.JUDGE_UNKNOWN
    failed = [g for g in grades if g["verdict"] == "fail" and not g["advisory"]]
    if any(g["grader"] == "sandbox" for g in failed):
        return FailureCause.SANDBOX
    if any(g["veto"] for g in failed):
        return FailureCause.RULE_VETO
    return FailureCause.ASSERTION


def _failed(grade: GradeRow) -> bool:
    return grade["verdict"] == "fail"


_DECIDING: Mapping[FailureCause, Callable[[GradeRow], bool]] = {
    FailureCause.SANDBOX: lambda g: g["grader"] == "sandbox" and _failed(g),
    FailureCause.RULE_VETO: lambda g: bool(g["veto"]) and _failed(g),
    FailureCause.UNSUPPORTED: lambda g: g["verdict"] == "unsupported",
    FailureCause.JUDGE_UNKNOWN: lambda g: g["verdict"] == "unknown",
    FailureCause.INFRASTRUCTURE: lambda g: g["verdict"] == "error",
}
"""Which grades decided a trial of each cause (else: a failed one), for its detail line."""


def _detail(trial: TrialRow, grades: Sequence[GradeRow], cause: FailureCause) -> str:
    """The first line that says why: the error's cause, else the grade that decided."""
    if trial["cause"] and trial["cause_detail"]:
        return f"{trial['cause']}: {trial['cause_detail'][0]}"
    wanted = _DECIDING.get(cause, _failed)
    for grade in grades:
        if not grade["advisory"] and wanted(grade) and grade["evidence"]:
            return f"{grade['grader']}: {grade['evidence'][0]}"
    return ""


def why_not_passed(trial: TrialRow, grades: Sequence[GradeRow]) -> tuple[FailureCause, str] | None:
    """A trial's primary cause and the first line that says so (None for a pass).

    What ``replay report`` lists under the cause, and ``replay run``'s progress line shows.
    """
    cause = primary_cause(trial, grades)
    return None if cause is None else (cause, _detail(trial, grades, cause))


def cause_groups(
    trials: Iterable[TrialRow], grades: Mapping[tuple[str, int], Sequence[GradeRow]]
) -> list[CauseGroup]:
    """Every failure cause, in ``FailureCause`` order, with the trials it is primary for.

    Causes no trial had are there too, empty (``count`` 0).
    """
    by_cause: dict[FailureCause, list[FailedTrial]] = {cause: [] for cause in FailureCause}
    for trial in trials:
        own = grades.get((trial["case_id"], trial["idx"]), ())
        cause = primary_cause(trial, own)
        if cause is not None:
            detail = _detail(trial, own, cause)
            by_cause[cause].append(
                FailedTrial(trial["case_id"], trial["idx"], cause, detail, trial["cassette"])
            )
    return [
        CauseGroup(cause, tuple(sorted(rows, key=lambda t: (t.case_id, t.idx))))
        for cause, rows in by_cause.items()
    ]
