"""What a regrade moved: verdicts before and after, per grader, against people's labels."""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from ..graders import Verdict
from ..results import LabelRecord, TrialRecord, labelled_trials, people_verdict


@dataclass(frozen=True, slots=True)
class GraderChange:
    """One grader's verdict on one trial, before and after (None: it gave no grade)."""

    grader: str
    before: Verdict | None
    after: Verdict | None


@dataclass(frozen=True, slots=True)
class TrialChange:
    """A trial whose verdict the regrade changed."""

    case_id: str
    idx: int
    before: Verdict
    after: Verdict
    graders: tuple[GraderChange, ...]
    """The graders whose verdict moved (the cause of the change)."""
    label: Verdict | None
    """What people said of the trial (None: unlabelled, or they disagree)."""
    cassette: str | None


@dataclass(frozen=True, slots=True)
class GraderFigures:
    """One grader (or ``verdict``: the trial's) over the regraded trials.

    Precision and recall are of its ``pass`` against the human labels: of the
    labelled trials it passed, the share people passed; of those people passed,
    the share it passed. None where there is nothing to divide by.
    """

    grader: str
    graded: int
    """Trials it graded, before or after."""
    changed: int
    labelled: int
    """Of those, trials people labelled pass or fail (and it said pass or fail)."""
    precision_before: float | None
    recall_before: float | None
    precision: float | None
    recall: float | None


@dataclass(frozen=True)
class Regrade:
    """What a regrade moved (``replay regrade``).

    Attributes:
        run: The run regraded.
        regraded: Trials graded again.
        skipped: Trials that could not be (``CASE#INDEX``, why): the regrade is incomplete.
        changes: The trials whose verdict changed.
        graders: Per grader, then ``verdict`` (the trials' verdicts), changes and
            precision/recall against labels.
        cases: Per case, (verdicts changed, trials regraded).
        max_drift: The share of changed verdicts allowed.
        labels_only: Only the labelled trials were regraded (``--against-labels``).
        stored_as: The run the regraded trials were stored as (None: not stored).
    """

    run: str
    regraded: int
    skipped: tuple[tuple[str, str], ...]
    changes: tuple[TrialChange, ...]
    graders: tuple[GraderFigures, ...]
    cases: Mapping[str, tuple[int, int]]
    max_drift: float
    labels_only: bool = False
    stored_as: str | None = None
    unrecorded: tuple[str, ...] = ()
    """Trials that never had a cassette (they could not run): nothing to grade again."""

    @property
    def drift(self) -> float:
        """The share of regraded trials whose verdict changed."""
        return len(self.changes) / self.regraded if self.regraded else 0.0

    @property
    def drifted(self) -> bool:
        """More verdicts changed than ``max_drift`` allows."""
        return self.drift > self.max_drift

    @property
    def fewer_agree(self) -> bool:
        """Against labels: the regraded verdicts agree with people on fewer trials.

        (Than the stored verdicts did; only changed trials can tell them apart.)
        """
        if not self.labels_only:
            return False
        before = sum(c.label is not None and c.before == c.label for c in self.changes)
        after = sum(c.label is not None and c.after == c.label for c in self.changes)
        return after < before

    @property
    def passed(self) -> bool:
        """Within the drift allowed (and, against labels, agreeing with people no less)."""
        return not self.drifted and not self.fewer_agree

    @property
    def complete(self) -> bool:
        """Whether every trial with a cassette was graded again (and there was one)."""
        return self.regraded > 0 and not self.skipped

    def to_json(self) -> dict[str, Any]:
        """As JSON-ready data (what ``--json`` prints)."""
        return {
            "run": self.run,
            "regraded": self.regraded,
            "changed": len(self.changes),
            "drift": self.drift,
            "max_drift": self.max_drift,
            "passed": self.passed,
            "complete": self.complete,
            "labels_only": self.labels_only,
            "stored_as": self.stored_as,
            "skipped": [{"trial": t, "why": why} for t, why in self.skipped],
            "unrecorded": list(self.unrecorded),
            "changes": [
                {
                    "trial": f"{c.case_id}#{c.idx}",
                    "before": c.before.value,
                    "after": c.after.value,
                    "label": c.label.value if c.label else None,
                    "graders": {g.grader: [_name(g.before), _name(g.after)] for g in c.graders},
                    "cassette": c.cassette,
                }
                for c in self.changes
            ],
            "graders": [dataclasses.asdict(g) for g in self.graders],
            "cases": {case: {"changed": n, "trials": t} for case, (n, t) in self.cases.items()},
        }


def _name(verdict: Verdict | None) -> str | None:
    return verdict.value if verdict is not None else None


def human_verdicts(labels: Sequence[LabelRecord]) -> dict[tuple[str, int], Verdict]:
    """Each labelled trial's verdict by people, on the whole trial (``people_verdict``)."""
    return {
        (case_id, idx): verdict
        for (_, case_id, idx), people in labelled_trials(labels).items()
        if (verdict := people_verdict(people, "")) is not None
    }


def _verdicts(trial: TrialRecord) -> dict[str, Verdict]:
    return {g.grader: g.verdict for g in trial.grades}


def compare(
    run: str,
    pairs: Sequence[tuple[TrialRecord, TrialRecord]],
    labels: Mapping[tuple[str, int], Verdict],
    skipped: Sequence[tuple[str, str]],
    max_drift: float,
    labels_only: bool,
    store_as: str | None,
) -> Regrade:
    changes: list[TrialChange] = []
    cases: dict[str, list[int]] = {}
    seen: dict[str, list[tuple[Verdict | None, Verdict | None, Verdict | None]]] = {}
    for before, after in pairs:
        label = labels.get((before.case_id, before.idx))
        old, new = _verdicts(before), _verdicts(after)
        moved = tuple(
            GraderChange(g, old.get(g), new.get(g))
            for g in dict.fromkeys([*old, *new])
            if old.get(g) != new.get(g)
        )
        for g in dict.fromkeys([*old, *new]):
            seen.setdefault(g, []).append((old.get(g), new.get(g), label))
        seen.setdefault("verdict", []).append((before.verdict, after.verdict, label))
        counts = cases.setdefault(before.case_id, [0, 0])
        counts[1] += 1
        if before.verdict != after.verdict:
            counts[0] += 1
            changes.append(
                TrialChange(
                    before.case_id,
                    before.idx,
                    before.verdict,
                    after.verdict,
                    moved,
                    label,
                    before.cassette,
                )
            )
    figures = tuple(_figures(g, rows) for g, rows in sorted(seen.items(), key=_verdict_last))
    return Regrade(
        run,
        len(pairs),
        tuple(skipped),
        tuple(changes),
        figures,
        {case: (n, t) for case, (n, t) in sorted(cases.items())},
        max_drift,
        labels_only,
        store_as,
    )


def _verdict_last(item: tuple[str, Any]) -> tuple[bool, str]:
    return item[0] == "verdict", item[0]


def _figures(
    grader: str, rows: Sequence[tuple[Verdict | None, Verdict | None, Verdict | None]]
) -> GraderFigures:
    def precision_recall(index: int) -> tuple[float | None, float | None, int]:
        graded = [
            (row[index] is Verdict.PASS, label is Verdict.PASS)
            for row in rows
            if (label := row[2]) is not None and row[index] in (Verdict.PASS, Verdict.FAIL)
        ]
        hits = sum(said and truth for said, truth in graded)
        said_pass = sum(said for said, _ in graded)
        truly = sum(truth for _, truth in graded)
        return (
            hits / said_pass if said_pass else None,
            hits / truly if truly else None,
            len(graded),
        )

    p_before, r_before, _ = precision_recall(0)
    p_after, r_after, labelled = precision_recall(1)
    return GraderFigures(
        grader,
        sum(1 for before, after, _ in rows if before is not None or after is not None),
        sum(1 for before, after, _ in rows if before != after),
        labelled,
        p_before,
        r_before,
        p_after,
        r_after,
    )
