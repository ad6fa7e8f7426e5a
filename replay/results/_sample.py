"""Trials for a person to read (``replay sample``): failures and passes, stratified, seeded.

Reading a few trials by hand is how one finds out whether the graders are right. A
handful picked at random from a run mostly shows its commonest failure; picking
round-robin over strata shows each case and each way it failed before any twice.
"""

from __future__ import annotations

import random
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from recorder import ConfigError

from ._record import TrialRecord
from ._store import Store

Stratum = tuple[str, str]
"""(case id, failure cause; ``""`` for a pass)."""


@dataclass(frozen=True, slots=True)
class Sample:
    """The trials of a run picked for reading (``replay.sample``), in the order to read them.

    ``failed`` are trials the agent failed (``TrialRecord.failed``: verdict ``fail``, or an
    ``error`` it is to blame for); ``passed`` are trials that passed. Trials that are
    neither (``unsupported``, ``unknown``, an error that is not the agent's) are never
    picked: there is no agent's work in them to judge.
    """

    run: str
    seed: int
    failed: tuple[TrialRecord, ...]
    """Picked from the failed trials, round-robin over (case, failure cause)."""
    passed: tuple[TrialRecord, ...]
    """Picked from the passing trials, round-robin over cases."""
    failing: int
    """How many trials of the run failed (what ``failed`` was picked from)."""
    passing: int
    """How many trials of the run passed."""

    @property
    def trials(self) -> tuple[TrialRecord, ...]:
        """Every pick: the failed ones, then the passing ones."""
        return self.failed + self.passed

    def to_json(self) -> dict[str, Any]:
        """As JSON-ready data (what ``replay sample --json`` prints, before its commands)."""
        return {
            "run": self.run,
            "seed": self.seed,
            "failing": self.failing,
            "passing": self.passing,
            "picks": [
                {
                    "trial": f"{t.case_id}#{t.idx}",
                    "case_id": t.case_id,
                    "idx": t.idx,
                    "picked": "pass" if t.passed else "fail",
                    "verdict": t.verdict.value,
                    "cause": why[0].value if (why := t.why_not_passed) else None,
                    "detail": why[1] if why else None,
                    "cassette": t.cassette,
                }
                for t in self.trials
            ],
        }


def _stratum(trial: TrialRecord) -> Stratum:
    cause = trial.failure
    return trial.case_id, cause.value if cause is not None else ""


def _round_robin(
    trials: Sequence[TrialRecord], count: int, key: Callable[[TrialRecord], Stratum], salt: str
) -> tuple[TrialRecord, ...]:
    """Up to ``count`` trials, one per stratum per round, every draw seeded by ``salt``.

    Each round takes the next trial of every stratum that has one left, a case's first
    stratum before any case's second: every case is read before any case twice, every
    (case, cause) before any twice. Each stratum's trials, each case's strata and the
    order of the cases are shuffled by generators seeded with ``salt`` and their own
    names, so a stratum's order does not change when another case gains trials.
    """
    strata: dict[Stratum, list[TrialRecord]] = {}
    for trial in sorted(trials, key=lambda t: (t.case_id, t.idx)):
        strata.setdefault(key(trial), []).append(trial)
    for (case, cause), rows in strata.items():
        random.Random(f"{salt}/{case}/{cause}").shuffle(rows)
    cases = sorted({case for case, _ in strata})
    random.Random(salt).shuffle(cases)
    rank: dict[Stratum, int] = {}
    for case in cases:
        own = sorted(k for k in strata if k[0] == case)
        random.Random(f"{salt}/{case}").shuffle(own)
        rank.update((k, i) for i, k in enumerate(own))
    place = {case: i for i, case in enumerate(cases)}
    order = sorted(strata, key=lambda k: (rank[k], place[k[0]]))
    picks: list[TrialRecord] = []
    for turn in range(max((len(rows) for rows in strata.values()), default=0)):
        for k in order:
            if len(picks) == count:
                return tuple(picks)
            if turn < len(strata[k]):
                picks.append(strata[k][turn])
    return tuple(picks)


def sample(store: Store, run: str, *, passed: int = 5, failed: int = 5, seed: int = 0) -> Sample:
    """Pick up to ``failed`` failed and ``passed`` passing trials of ``run`` for a person to read.

    Failed trials are stratified by (case, failure cause), passing ones by case, and
    picked round-robin over the strata (a case that fails often does not crowd out the
    others), each stratum in a seeded shuffle: the same store, run and seed give the
    same picks. Label them with ``Store.add_label`` (``replay label``), or in
    ``replay view``'s review queue, ``/runs/RUN/review?pass=5&fail=5&seed=0``.

    ```python
    picked = replay.sample(Store(), "nightly", failed=5, passed=5, seed=1)
    for trial in picked.failed:
        print(f"{trial.case_id}#{trial.idx}", trial.why_not_passed, trial.cassette)
    ```

    Raises:
        ConfigError: No such run in the store.
        ValueError: A negative count.
    """
    if passed < 0 or failed < 0:
        raise ValueError(f"counts to pick cannot be negative (passed={passed}, failed={failed})")
    if store.run(run) is None:
        raise ConfigError(f"no run {run!r} in {store.path}; see `replay runs`")
    trials = store.trials(run)
    bad = [t for t in trials if t.failed]
    good = [t for t in trials if t.passed]
    return Sample(
        run=run,
        seed=seed,
        failed=_round_robin(bad, failed, _stratum, f"{seed}/fail"),
        passed=_round_robin(good, passed, _stratum, f"{seed}/pass"),
        failing=len(bad),
        passing=len(good),
    )
