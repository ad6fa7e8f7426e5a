"""Suite health: cases that never pass, saturated capability suites, cases ready to graduate."""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from recorder import ConfigError

from ..cases import CaseFileError, Suite
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


@dataclass(frozen=True, slots=True)
class HealthFlag:
    """One finding of ``suite_health``, with its evidence."""

    kind: str
    """never-passes, graduate, ambiguous or saturated."""
    subject: str
    """The case (or suite) it is about."""
    evidence: str


def suite_health(
    store: Store,
    runs: Sequence[str] | None = None,
    *,
    min_trials: int = MIN_TRIALS,
    saturated: float = SATURATED,
) -> list[HealthFlag]:
    """Read the runs (default: all, oldest first) and flag what needs a person.

    Case by case (sorted by id): a case none of whose ``min_trials`` or more
    graded trials passed (``never-passes``: the task or its grader is
    probably broken), a capability case whose every trial passed over its
    last three runs (``graduate``); a case behind trials that people labelled
    differently (``ambiguous``: see ``label_agreement``); then a capability suite passing at least
    ``saturated`` of its graded trials (``saturated``). ``replay
    suite-health`` prints them.

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
    return flags


_SUITE = re.compile(r"^suite:\s*capability\s*$", re.MULTILINE)


def graduate(case_path: str | Path) -> Path:
    """Move a capability case into the regression suite; return its (new) path.

    The ``suite:`` line is rewritten in place (comments kept). A case in a
    directory named ``capability`` moves to the sibling ``regression``
    directory (same depth: relative fixture paths still resolve).

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
        target.parent.mkdir(exist_ok=True)
    target.write_text(text, encoding="utf-8")
    if target != case_path:
        case_path.unlink()
    return target
