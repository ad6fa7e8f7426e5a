"""Suite health: cases that never pass, saturated capability suites, cases ready to graduate.

Also ambiguous cases, and suites whose act and refrain cases are out of balance.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path

from recorder import ConfigError

from ..cases import CaseFileError, Expects, Suite, write_whole
from ..graders import Verdict
from ._agreement import ambiguous_cases
from ._record import TrialRecord
from ._store import Store

MIN_TRIALS = 10
"""A case that failed this many graded trials without one pass is flagged."""
SATURATED = 0.95
"""A capability suite passing this share of its trials is saturated."""
GRADUATION_RUNS = 3
"""A capability case passing every trial of its last this-many runs may graduate."""
MIN_SIDE = 1 / 3
"""A suite whose act or refrain cases are under this share of its declared ones is
flagged ``unbalanced``."""


@dataclass(frozen=True, slots=True)
class HealthFlag:
    """One finding of ``suite_health``, with its evidence."""

    kind: str
    """never-passes, graduate, ambiguous, saturated or unbalanced."""
    subject: str
    """The case (or suite) it is about."""
    evidence: str


@dataclass(frozen=True, slots=True)
class SuiteBalance:
    """How many of a suite's cases expect the agent to act, to refrain, or say neither."""

    suite: str
    """``capability``, ``regression``, or ``""`` for trials stored without one."""
    act: int
    refrain: int
    undeclared: int
    """Cases that declare no ``expects:`` (counted apart, in neither side)."""

    @property
    def declared(self) -> int:
        """Cases that declare a direction."""
        return self.act + self.refrain

    def lopsided(self, min_side: float = MIN_SIDE) -> bool:
        """Whether one side has under ``min_side`` of the declared cases (none: no)."""
        return self.declared > 0 and min(self.act, self.refrain) < min_side * self.declared

    def describe(self) -> str:
        """``act 4, refrain 1, undeclared 0``."""
        return f"act {self.act}, refrain {self.refrain}, undeclared {self.undeclared}"


def suite_balance(store: Store, runs: Sequence[str] | None = None) -> list[SuiteBalance]:
    """Count each suite's cases by direction over the runs (default: all), by suite name.

    A case counts once, in the suite and direction its last trial (in run order) declares;
    a trial that declares no direction (one that could not run, or stored before store
    version 5) leaves the case's declared one standing.

    Raises:
        ConfigError: A named run is not in the store.
    """
    trials: list[TrialRecord] = []
    for name in runs or store.runs():
        if store.run(name) is None:
            raise ConfigError(f"no run {name!r} in {store.path}")
        trials += store.trials(name)
    return _balances(trials)


def _balances(trials: Iterable[TrialRecord]) -> list[SuiteBalance]:
    suites: dict[str, str] = {}
    directions: dict[str, Expects | None] = {}
    for trial in trials:
        suites[trial.case_id] = trial.suite.value if trial.suite is not None else ""
        if trial.expects is not None or trial.case_id not in directions:
            directions[trial.case_id] = trial.expects
    out = []
    for suite in sorted(set(suites.values())):
        ways = [directions[c] for c, s in suites.items() if s == suite]
        out.append(
            SuiteBalance(
                suite, ways.count(Expects.ACT), ways.count(Expects.REFRAIN), ways.count(None)
            )
        )
    return out


def suite_health(
    store: Store,
    runs: Sequence[str] | None = None,
    *,
    min_trials: int = MIN_TRIALS,
    saturated: float = SATURATED,
    min_side: float = MIN_SIDE,
) -> list[HealthFlag]:
    """Read the runs (default: all, oldest first) and flag what needs a person.

    Case by case (sorted by id): a case none of whose ``min_trials`` or more
    graded trials passed (``never-passes``: the task or its grader is
    probably broken), a capability case whose every trial passed over its
    last three runs (``graduate``); a case behind trials that people labelled
    differently (``ambiguous``: see ``label_agreement``); then a capability suite passing at least
    ``saturated`` of its graded trials (``saturated``); a suite whose act or
    refrain cases are under ``min_side`` of those that declare one
    (``unbalanced``: see ``suite_balance``). ``replay suite-health`` prints
    them, after each suite's balance.

    Raises:
        ConfigError: A named run is not in the store.
    """
    names = list(runs or store.runs())
    rows: list[tuple[int, TrialRecord]] = []
    """Each trial with its run's place in ``names``."""
    for order, name in enumerate(names):
        if store.run(name) is None:
            raise ConfigError(f"no run {name!r} in {store.path}")
        rows += [(order, t) for t in store.trials(name)]
    graded = [(o, t) for o, t in rows if t.verdict in (Verdict.PASS, Verdict.FAIL)]
    flags: list[HealthFlag] = []
    by_case: dict[str, list[tuple[int, TrialRecord]]] = {}
    for order, trial in graded:
        by_case.setdefault(trial.case_id, []).append((order, trial))
    for case_id, trials in sorted(by_case.items()):
        passes = sum(t.passed for _, t in trials)
        if passes == 0 and len(trials) >= min_trials:
            in_runs = ", ".join(dict.fromkeys(names[o] for o, _ in trials))
            flags.append(
                HealthFlag(
                    "never-passes",
                    case_id,
                    f"0 of {len(trials)} trials passed (runs {in_runs}): the task or "
                    "its grader is probably broken",
                )
            )
        if trials[-1][1].suite is Suite.CAPABILITY:
            recent = sorted({o for o, _ in trials})[-GRADUATION_RUNS:]
            last = [t for o, t in trials if o in recent]
            if len(recent) == GRADUATION_RUNS and len(last) >= 3 and all(t.passed for t in last):
                flags.append(
                    HealthFlag(
                        "graduate",
                        case_id,
                        f"pass^3 = 1: {len(last)} of {len(last)} trials passed over the "
                        f"last {GRADUATION_RUNS} runs ({', '.join(names[o] for o in recent)})",
                    )
                )
    for case_id, split in sorted(ambiguous_cases(store, names).items()):
        flags.append(
            HealthFlag(
                "ambiguous",
                case_id,
                f"people labelled {len(split)} trial(s) differently ({', '.join(split[:5])}"
                f"{', ...' if len(split) > 5 else ''}): read the task and its grader; "
                "see `replay label-agreement`",
            )
        )
    capability = [t for _, t in graded if t.suite is Suite.CAPABILITY]
    if capability:
        rate = sum(t.passed for t in capability) / len(capability)
        if rate >= saturated:
            flags.append(
                HealthFlag(
                    "saturated",
                    "capability",
                    f"{rate:.1%} of {len(capability)} capability trials passed "
                    f"(>= {saturated:.0%}): time for harder cases",
                )
            )
    for balance in _balances(t for _, t in rows):
        if balance.lopsided(min_side):
            few = "refrain" if balance.refrain < balance.act else "act"
            flags.append(
                HealthFlag(
                    "unbalanced",
                    balance.suite or "(no suite)",
                    f"{balance.describe()}: {few} cases are under {min_side:.0%} of the "
                    f"{balance.declared} declared; an agent tuned on one side regresses on "
                    "the other, unseen",
                )
            )
    return flags


_SUITE = re.compile(r"^suite:\s*capability\s*$", re.MULTILINE)


def graduate(case_path: str | Path) -> Path:
    """Move a capability case into the regression suite; return its (new) path.

    The ``suite:`` line is rewritten in place (comments kept). A case in a
    directory named ``capability`` moves to the sibling ``regression``
    directory (same depth: relative fixture paths still resolve). The new file is
    written whole before the old one goes: a graduate cut off leaves the case as it
    was, or whole in its new place (a cut between the two, in both).

    Raises:
        CaseFileError: The case is not in the capability suite.
        FileNotFoundError: There is no file at ``case_path``.
    """
    case_path = Path(case_path)
    text = case_path.read_text(encoding="utf-8")
    if not _SUITE.search(text):
        raise CaseFileError(
            "is not a capability case (no `suite: capability` line)", path=case_path
        )
    text = _SUITE.sub("suite: regression", text, count=1)
    target = case_path
    if case_path.parent.name == "capability":
        target = case_path.parent.parent / "regression" / case_path.name
    write_whole(target, text)  # (its folder made if missing)
    if target != case_path:
        case_path.unlink()
    return target
