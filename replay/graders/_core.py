"""Verdicts, grades, the Grader protocol, the registry, and how grades combine."""

from __future__ import annotations

import enum
import importlib
import traceback
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Protocol

from recorder import ConfigError

from ..plugins import GROUPS, Registry
from ._case import GradedCase

if TYPE_CHECKING:
    from recorder import Cassette

    from ..worlds import StateDiff
    from ._world_view import WorldView


class Verdict(str, enum.Enum):
    """What a grade (or a trial) says."""

    PASS = "pass"
    FAIL = "fail"
    UNKNOWN = "unknown"
    """The grader could not tell (e.g. a judge that is unsure)."""
    UNSUPPORTED = "unsupported"
    """Offline replay met a call the cassette cannot answer."""
    ERROR = "error"
    """The grader, or the agent, raised."""

    @classmethod
    def parse(cls, value: str) -> Verdict:
        """Parse a verdict name, listing the valid ones on error."""
        try:
            return cls(value)
        except ValueError:
            valid = ", ".join(v.value for v in cls)
            raise ValueError(f"unknown verdict {value!r}; use one of {valid}") from None


@dataclass(frozen=True, slots=True)
class Grade:
    """One grader's verdict on one trial, with its evidence."""

    grader: str
    verdict: Verdict
    evidence: tuple[str, ...] = ()
    score: float | None = None
    """Partial credit in [0, 1], when the grader gives one."""
    veto: bool = False
    """A hard failure: fails the trial whatever the other grades (hybrid scoring too)."""
    advisory: bool = False
    """Shown and stored but left out of the trial's verdict (an uncalibrated judge)."""
    meta: Mapping[str, Any] | None = None
    """What produced the grade, stored with it (a judge's model, settings, rubric hash)."""


@dataclass(frozen=True, slots=True)
class Trial:
    """Everything a grader may read about one trial. Graders read the outcome first."""

    case: GradedCase
    """The case (a loaded ``replay.Case``; graders read what ``GradedCase`` names)."""
    cassette: Cassette
    diff: StateDiff
    world: WorldView
    """The world after the trial."""
    answer: str | None = None
    unsupported: tuple[str, ...] = ()
    """Calls offline replay could not answer (each with its nearest recorded call)."""
    cost: float | None = None
    """What the trial's LLM calls cost (USD), when every model called has a price."""
    reference: Any = None
    """The reference solution's outcome, for ``matches_reference`` (``replay.cases._solution``)."""
    judge: Callable[[Trial], list[Grade]] | None = None
    """The run's LLM judge, ready to judge the case's rubric (the ``judge`` grader calls it)."""


class Grader(Protocol):
    """Turns a trial into grades.

    Example:
        ```python
        @grader("polite")
        def polite(trial: Trial) -> Grade:
            ok = "please" in (trial.answer or "").lower()
            return Grade("polite", Verdict.PASS if ok else Verdict.FAIL)
        ```
    """

    def __call__(self, trial: Trial) -> Grade | Iterable[Grade]:
        """Grade one trial."""
        ...


def _grader(name: str, obj: object) -> Grader:
    """What a plugin's ``agent_replay.graders`` entry point names, as a grader (version 1)."""
    if not callable(obj):
        raise ConfigError(f"it names a {type(obj).__name__}, not a grader (Trial -> Grade)")
    VERSIONS.setdefault(name, "1")
    return obj


REGISTRY: Registry[Grader] = Registry("grader", GROUPS["graders"], _grader)
"""Graders by name; built-ins register here the same way users' and plugins' do."""
VERSIONS: dict[str, str] = {}
"""Each registered grader's version (``@grader(name, version=...)``), pinned with every run."""


def grader(name: str, *, version: str = "1") -> Callable[[Grader], Grader]:
    """Register a grader under ``name``.

    ``version`` goes in the pins of every run that uses it: bump it when the
    grader's verdicts change, so ``replay gate`` does not compare runs graded
    differently. Registering the same function again does nothing.

    Raises:
        ConfigError: Another grader has that name (``REGISTRY.unregister`` it first).
    """

    def register(fn: Grader) -> Grader:
        REGISTRY.register(name, fn)
        VERSIONS[name] = version
        return fn

    return register


BUILT_IN = ("replay", "sandbox", "rule", "state", "matches_reference", "judge")
"""The graders every trial gets; a case's ``graders:`` and ``replay run --grader`` add more."""


@dataclass(frozen=True)
class GraderUse:
    """A grader as a case or run names it: its registered name and the arguments it is given.

    A grader with arguments is called ``grader(trial, **args)``.
    """

    name: str
    args: Mapping[str, Any] = field(default_factory=dict)

    def pin(self) -> dict[str, Any]:
        """What the run's pins say of it."""
        return {"version": VERSIONS.get(self.name), "args": dict(self.args)}


def resolve(entries: Iterable[str | GraderUse], *, strict: bool = False) -> list[GraderUse]:
    """The graders ``entries`` name, importing ``module:name`` entries' modules.

    A grader registers when its module is imported; ``module:name`` names the
    module, so a worker process that has not imported it yet registers it here.
    A name given twice with the same arguments runs once. With ``strict``, a name
    nobody registered is an error now (a typo in a case), not an ``error`` grade later.

    Raises:
        ConfigError: A module cannot be imported (or raises when imported), or with
            ``strict`` a name is registered by nobody.
    """
    out: dict[tuple[str, str], GraderUse] = {}
    for entry in entries:
        use = entry if isinstance(entry, GraderUse) else GraderUse(entry)
        module, colon, name = use.name.rpartition(":")
        if colon and module:
            try:
                importlib.import_module(module)
            except Exception as exc:  # not found, or raises on import (a syntax error...)
                what = f"{type(exc).__name__}: {exc}"
                raise ConfigError(
                    f"grader {use.name!r}: cannot import {module!r} ({what})"
                ) from None
            use = GraderUse(name, use.args)
        out.setdefault((use.name, repr(sorted(use.args.items()))), use)
    missing = [u.name for u in out.values() if u.name not in REGISTRY]
    if strict and missing:
        raise ConfigError(
            f"no grader named {', '.join(map(repr, missing))} is registered (registered: "
            f"{', '.join(sorted(REGISTRY))}); name it MODULE:NAME so that its module is imported"
        )
    return list(out.values())


def run_graders(trial: Trial, names: Iterable[str | GraderUse] | None = None) -> list[Grade]:
    """Run graders on a trial; one that raises yields an ``error`` grade, not a crash.

    A name nobody registered is an ``error`` grade saying so.
    """
    grades: list[Grade] = []
    entries = names if names is not None else list(REGISTRY)
    for use in (e if isinstance(e, GraderUse) else GraderUse(e) for e in entries):
        name = use.name
        if name not in REGISTRY:
            known = ", ".join(sorted(REGISTRY.names()))
            why = (
                f"no grader named {name!r} is registered (registered: {known}); name it "
                "MODULE:NAME so that its module is imported"
            )
            grades.append(Grade(name, Verdict.ERROR, (why,)))
            continue
        try:
            fn: Any = REGISTRY[name]
            result = fn(trial, **use.args) if use.args else fn(trial)
            grades.extend([result] if isinstance(result, Grade) else list(result))
        except Exception as exc:  # a broken grader is a failed grade, the run goes on
            where = traceback.extract_tb(exc.__traceback__)[-1]
            detail = f"{type(exc).__name__}: {exc} ({where.filename}:{where.lineno})"
            grades.append(Grade(name, Verdict.ERROR, (detail,)))
    return grades


PASS_SCORE = 0.8
"""Weighted and hybrid scoring pass a trial whose score reaches this."""


class Cause(str, enum.Enum):
    """Whose fault an ``error`` trial is, when it is not a grader's verdict."""

    AGENT = "agent"
    """The agent raised (its exception is recorded in the cassette)."""
    USER = "user"
    """The simulated user failed (its endpoint erred, or it said nothing)."""
    HARNESS = "harness"
    """The trial could not run (a bad world, a worker that died with it...)."""
    SERVER = "server"
    """A third-party MCP server the agent used failed (did not start, died, garbled or hung)."""
    LIMIT = "limit"
    """A limit of the trial fired (its deadline, memory, LLM tokens or a tool result's size):
    which ones are the trial's guard flags."""


AGENT_CAUSES: frozenset[str] = frozenset({Cause.AGENT.value, Cause.LIMIT.value})
"""The causes that make an ``error`` trial the agent's failure (it raised, or ran past a
limit): ``replay run``'s exit status, and what newly fails in a diff or a gate."""


@dataclass(frozen=True, slots=True)
class Outcome:
    """A trial's verdict from its grades, and why when no grade is to blame."""

    verdict: Verdict
    score: float | None
    grades: tuple[Grade, ...] = field(default_factory=tuple)
    cause: Cause | None = None
    """Set when the trial is an ``error`` that no grade is to blame for (whose, or a limit)."""
    detail: tuple[str, ...] = ()
    """What went wrong, for the ``cause``."""

    @property
    def evidence(self) -> list[str]:
        """The cause first, then the evidence of the grades that did not pass."""
        cause = [f"{self.cause.value}: {line}" for line in self.detail] if self.cause else []
        return cause + [
            f"{g.grader}{' (advisory)' if g.advisory else ''}: {e}"
            for g in self.grades
            if g.verdict != Verdict.PASS
            for e in g.evidence
        ]


def combine(
    grades: Iterable[Grade], scoring: str = "all_pass", weights: Mapping[str, float] | None = None
) -> Outcome:
    """Combine grades into the trial's verdict.

    - ``all_pass`` (default): every grade must pass.
    - ``weighted``: the weighted mean of the scores (a grade without a score
      counts 1 for pass, 0 otherwise) must reach ``PASS_SCORE``.
    - ``hybrid``: the rule grader's grades are gates that must pass; the
      others are weighted.

    Advisory grades are left out. Whatever the scoring: a vetoing grade that fails fails the trial;
    ``unsupported`` and ``error`` grades make the trial ``unsupported`` /
    ``error`` (kept out of pass rates); ``unknown`` grades make it
    ``unknown`` unless something failed outright.
    """
    if scoring not in ("all_pass", "weighted", "hybrid"):
        raise ValueError(f"unknown scoring {scoring!r}; use all_pass, weighted or hybrid")
    every = tuple(grades)
    grades = tuple(g for g in every if not g.advisory)
    verdicts = {g.verdict for g in grades}
    for special in (Verdict.UNSUPPORTED, Verdict.ERROR):
        if special in verdicts:
            return Outcome(special, None, every)
    gates = [g for g in grades if scoring == "hybrid" and g.grader == "rule"]
    scored = [g for g in grades if g not in gates]
    weights = weights or {}
    total = sum(weights.get(g.grader, 1.0) for g in scored)
    score = sum(weights.get(g.grader, 1.0) * _score(g) for g in scored) / total if total else None
    failed = Verdict.FAIL in verdicts
    blocked = any(g.verdict == Verdict.FAIL and (g.veto or g in gates) for g in grades)
    if scoring == "all_pass" or blocked:
        verdict = Verdict.FAIL if failed else Verdict.PASS
    else:
        verdict = Verdict.PASS if (score or 0.0) >= PASS_SCORE else Verdict.FAIL
    if verdict == Verdict.PASS and Verdict.UNKNOWN in verdicts:
        verdict = Verdict.UNKNOWN
    return Outcome(verdict, score, every)


def _score(grade: Grade) -> float:
    if grade.score is not None:
        return grade.score
    return 1.0 if grade.verdict == Verdict.PASS else 0.0


@dataclass(frozen=True, slots=True)
class TrialToolUse:
    """One trial's tool use, computed when it is graded and stored with it."""

    calls: int
    """Tool calls made."""
    selection: float | None
    """Share of the reference solution's calls whose tool was called (None: no reference)."""
    arguments: float | None
    """Of those, the share called with the reference's arguments."""
    abstained: bool | None
    """For a case tagged ``abstain``: whether no tool was called (else None)."""
    loops: int
    """Calls the agent repeated ``LOOP_REPEATS`` times or more with the same arguments."""
