"""What the store holds, typed: a trial (``TrialRecord``) and its grades (``GradeRecord``).

A record is what a trial left behind, read by attribute: its verdict a ``Verdict``,
its cause a ``Cause``, its guard flags ``Guard`` members, its usage and tool use
records of their own; why it did not pass is a property (``failure``,
``why_not_passed``). How a record sits in SQLite is the store's business alone
(``_schema``): adding a trial attribute is a field here and a migration line there.
"""

from __future__ import annotations

import enum
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

from ..cases import Expects, Suite
from ..graders import AGENT_CAUSES, Cause, Grade, TrialToolUse, Verdict
from ..modes import Guard


class FailureCause(str, enum.Enum):
    """Why a trial did not pass; the members are in the order reports list them.

    Each trial that did not pass has exactly one, its *primary* cause: the one that made
    its verdict (see ``TrialRecord.failure``).
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
class PartialCredit:
    """What a state grade's partial credit counts: the share of assertions held, and which.

    Recorded for cases scored by that share (``scoring: weighted`` or ``hybrid``).
    """

    share: float
    """Assertions held / assertions checked (the grade's score)."""
    held: tuple[str, ...]
    """The assertions that held, as the case writes them."""
    failed: tuple[str, ...]
    """The assertions that failed."""

    def describe(self) -> str:
        """One line: ``2/3 assertions held; failed: ...``."""
        total = len(self.held) + len(self.failed)
        failed = f"; failed: {', '.join(self.failed)}" if self.failed else ""
        return f"{len(self.held)}/{total} assertions held{failed}"


@dataclass(frozen=True, slots=True)
class GradeRecord:
    """One grade of a stored trial: a grader's verdict with its evidence."""

    grader: str
    verdict: Verdict
    score: float | None = None
    """Partial credit in [0, 1], when the grader gave one."""
    veto: bool = False
    """A hard failure: it fails the trial whatever the other grades say."""
    evidence: tuple[str, ...] = ()
    advisory: bool = False
    """Shown but left out of the trial's verdict (an uncalibrated judge)."""
    meta: Mapping[str, Any] = field(default_factory=dict)
    """What produced the grade, as the grader gave it (a judge's model, dimension and
    rubric hash); empty when it gave none."""

    @classmethod
    def of(cls, grade: Grade) -> GradeRecord:
        """The record of a grade just given."""
        return cls(
            grade.grader,
            grade.verdict,
            grade.score,
            grade.veto,
            tuple(grade.evidence),
            grade.advisory,
            dict(grade.meta) if grade.meta else {},
        )

    @property
    def failed(self) -> bool:
        """Whether the grade is a ``fail`` that counts toward the verdict (not advisory)."""
        return self.verdict is Verdict.FAIL and not self.advisory

    @property
    def partial_credit(self) -> PartialCredit | None:
        """Which assertions held and their share, when the grade records them.

        A state grade of a case scored ``weighted`` or ``hybrid`` does; others: None.
        """
        held, failed = self.meta.get("held"), self.meta.get("failed", [])
        if self.grader != _STATE or not isinstance(held, list) or self.score is None:
            return None
        return PartialCredit(self.score, tuple(map(str, held)), tuple(map(str, failed)))


@dataclass(frozen=True, slots=True)
class TrialUsage:
    """What a trial used; None: not known (an imported trial, or a call reported no usage)."""

    steps: int | None = None
    """LLM calls (or, for an agent that called none, tool calls)."""
    input_tokens: int | None = None
    """None when a call reported no usage: unknown, never counted as none."""
    output_tokens: int | None = None
    latency: float | None = None
    """Seconds the trial's recording lasted."""
    cost: float | None = None
    """What its LLM calls cost at the run's prices (None: a model had no price)."""
    duration: float | None = None
    """Seconds the trial took in the harness: its world made, the agent run, the trial graded
    (``latency`` is the recording's part of it). None: stored before store version 4."""


@dataclass(frozen=True, slots=True, kw_only=True)
class TrialRecord:
    """One stored trial: its verdict, what it used, why it did not pass, and its grades.

    ``Store.trials(run)`` gives them, by case and index; ``Store.add_trial(run, record)``
    stores one.
    """

    case_id: str
    idx: int
    """The trial's index in its case (``replay label RUN CASE#IDX``)."""
    suite: Suite | None = None
    verdict: Verdict
    score: float | None = None
    cassette: str | None = None
    """Where its cassette is (None: the trial could not run)."""
    usage: TrialUsage = TrialUsage()
    tags: tuple[str, ...] = ()
    """The case's tags."""
    cause: Cause | None = None
    """Whose fault an ``error`` is, when no grade is to blame (or a limit)."""
    cause_detail: tuple[str, ...] = ()
    """What went wrong, for the ``cause``."""
    tool_use: TrialToolUse | None = None
    """What the agent did with its tools; None: not measured (a trial stored before store
    version 2, one that could not run, an imported one)."""
    guards: tuple[Guard, ...] = ()
    """The limits that fired (each makes the trial an ``error`` of cause ``limit``)."""
    grades: tuple[GradeRecord, ...] = ()
    """Its grades, in the order they were given."""
    expects: Expects | None = None
    """Whether its case expects the agent to act or to refrain (the case's ``expects:``);
    None: undeclared, or stored before store version 5 (or a trial that could not run)."""

    @property
    def passed(self) -> bool:
        """Whether the verdict is ``pass``."""
        return self.verdict is Verdict.PASS

    @property
    def failed(self) -> bool:
        """Whether the agent failed: verdict ``fail``, or an ``error`` of one of ``AGENT_CAUSES``.

        (What ``replay run``'s exit status and a diff's or gate's "newly fails" count.)
        """
        return self.verdict is Verdict.FAIL or (
            self.verdict is Verdict.ERROR and self.cause in AGENT_CAUSES
        )

    @property
    def partial_credit(self) -> PartialCredit | None:
        """Its state grade's partial credit: which assertions held and their share.

        None: not recorded (a case scored ``all_pass``, a trial without a state grade).
        """
        return next((p for g in self.grades if (p := g.partial_credit) is not None), None)

    @property
    def failure(self) -> FailureCause | None:
        """The one cause of a trial that did not pass (None for a pass).

        The cause is what made the verdict, so the causes split the trials that did not
        pass by verdict: an ``error`` goes by its cause (a limit by the guard that fired,
        ``timeout`` before the others; no cause: a grader raised, ``infrastructure``) and
        never by the assertions it broke on the way; ``unsupported`` and ``unknown`` are
        their own; a ``fail`` takes its worst failing grade: a sandbox violation, then
        another veto, then any other failed grade (``assertion failed``). Advisory grades
        count for nothing, as in the verdict.
        """
        if self.verdict is Verdict.ERROR:
            if self.cause is Cause.LIMIT and Guard.TIMEOUT in self.guards:
                return FailureCause.TIMEOUT
            return _ERRORS.get(self.cause, FailureCause.INFRASTRUCTURE)
        if self.verdict is not Verdict.FAIL:
            return _BY_VERDICT[self.verdict]
        failed = [g for g in self.grades if g.failed]
        if any(g.grader == _SANDBOX for g in failed):
            return FailureCause.SANDBOX
        if any(g.veto for g in failed):
            return FailureCause.RULE_VETO
        return FailureCause.ASSERTION

    @property
    def why_not_passed(self) -> tuple[FailureCause, str] | None:
        """The primary cause and the first line that says so (None for a pass).

        The line is the error's cause and detail (``agent: ...``), else the first
        evidence of the grade that decided (``grader: evidence``); it may be empty.
        What ``replay report`` lists under the cause, and ``replay run``'s progress
        line shows.
        """
        cause = self.failure
        if cause is None:
            return None
        if self.cause is not None and self.cause_detail:
            return cause, f"{self.cause.value}: {self.cause_detail[0]}"
        wanted = _DECIDING.get(cause, _failed)
        for grade in self.grades:
            if not grade.advisory and wanted(grade) and grade.evidence:
                return cause, f"{grade.grader}: {grade.evidence[0]}"
        return cause, ""


_SANDBOX = "sandbox"
"""The grader whose veto is a sandbox violation."""
_STATE = "state"
"""The grader whose partial credit is the share of the case's assertions held."""

_ERRORS: Mapping[Cause | None, FailureCause] = {
    Cause.AGENT: FailureCause.AGENT_ERROR,
    Cause.LIMIT: FailureCause.LIMIT,
    Cause.HARNESS: FailureCause.INFRASTRUCTURE,
    Cause.SERVER: FailureCause.INFRASTRUCTURE,
    Cause.USER: FailureCause.INFRASTRUCTURE,
}
"""An ``error`` trial's cause, as a failure cause (none: a grader raised)."""

_BY_VERDICT: Mapping[Verdict, FailureCause | None] = {
    Verdict.PASS: None,
    Verdict.UNSUPPORTED: FailureCause.UNSUPPORTED,
    Verdict.UNKNOWN: FailureCause.JUDGE_UNKNOWN,
}
"""The failure cause of a verdict that is neither ``fail`` nor ``error``."""


def _failed(grade: GradeRecord) -> bool:
    return grade.verdict is Verdict.FAIL


_DECIDING: Mapping[FailureCause, Callable[[GradeRecord], bool]] = {
    FailureCause.SANDBOX: lambda g: g.grader == _SANDBOX and _failed(g),
    FailureCause.RULE_VETO: lambda g: g.veto and _failed(g),
    FailureCause.UNSUPPORTED: lambda g: g.verdict is Verdict.UNSUPPORTED,
    FailureCause.JUDGE_UNKNOWN: lambda g: g.verdict is Verdict.UNKNOWN,
    FailureCause.INFRASTRUCTURE: lambda g: g.verdict is Verdict.ERROR,
}
"""Which grades decided a trial of each cause (else: a failed one), for its detail line."""


@dataclass(frozen=True, slots=True)
class RunRecord:
    """One stored run: its spec and pins, and when it started and finished."""

    name: str
    spec: Mapping[str, Any]
    """The run's spec as ``RunSpec.to_stored`` wrote it (``RunSpec.from_stored`` reads it)."""
    pins: Mapping[str, Any]
    """What its verdicts depend on (mode, graders and their versions, model...)."""
    started: str
    """When it started (ISO 8601, UTC)."""
    finished: str | None
    """When it finished; None: not finished (``replay run --resume`` finishes it)."""
    golden: bool = False
    """Part of the graders' gold standard (``replay golden``): ``replay regrade --golden``
    grades its trials again whenever grading changes."""


@dataclass(frozen=True, slots=True)
class RunSummary:
    """A run in a store's list (``replay runs``): when, in which mode, its trials by verdict."""

    name: str
    mode: str | None
    started: str | None
    finished: str | None
    trials: int
    verdicts: Mapping[Verdict, int]
    """Its trials by verdict, the verdicts it has only, by name."""


@dataclass(frozen=True, slots=True)
class LabelRecord:
    """A human's verdict on a stored trial (``replay label``), for one judged dimension.

    ``verdict`` is ``pass``, ``fail`` or ``unknown`` (the labeller was unsure: it is
    kept, and left out of every comparison).
    """

    run: str
    case_id: str
    idx: int
    dimension: str
    """The judged dimension it is about; ``""``: every dimension of the trial."""
    verdict: Verdict
    note: str
    labeled: str
    """When (ISO 8601, UTC)."""
    labeller: str = ""
    """Who gave it (``replay label --by``); ``""``: unnamed."""


@dataclass(frozen=True, slots=True)
class JudgeCheckRecord:
    """The latest ``replay judge-check`` of a judge model on one rubric dimension."""

    model: str
    rubric_hash: str
    checked: str
    """When (UTC, ISO 8601)."""
    passed: bool
    """Whether every probe stayed under its threshold."""
    reason: str
    """Why it failed (``advisory: judge-check found ...``); ``""`` when it passed."""
    runs: tuple[str, ...]
    """The runs whose labelled trials were probed."""
    result: Mapping[str, Any]
    """The whole check, as ``JudgeCheck.to_json`` gives it."""
