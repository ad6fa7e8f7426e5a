"""How far a judge agrees with humans: agreement, Cohen's kappa, and when it may gate.

A human label is stored beside a trial (``replay label``), for one judged
dimension or for the whole trial (it then stands for every dimension). Each
judge grade of ``pass``/``fail`` with people's ``pass``/``fail`` verdict is one
pair (with two labellers, their majority: ``people_verdict``; a tie is no pair);
``unknown`` judge grades are counted apart (the unknown rate) and listed for
review; a label the labeller was unsure of compares with nothing.

A judge (its model and a dimension's rubric hash, which covers the judge
prompt and the criteria) is *calibrated* when, over every run in the store,
it has at least ``min_labels`` pairs and agrees on more than
``min_agreement`` of them, and its latest ``replay judge-check`` (if any)
found no bias: a judge whose verdicts flip when the answer is padded, say,
stays advisory whatever its agreement. Only a calibrated judge's grades
count toward a trial's verdict.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from recorder import ConfigError

from ..graders import Verdict
from ._agreement import LabelAgreement, cohen_kappa, label_agreement
from ._record import LabelRecord
from ._store import Store

MIN_LABELS = 20
"""Pairs a judge needs before it may gate (``--judge-min-labels``)."""
MIN_AGREEMENT = 0.8
"""Agreement a judge must exceed before it may gate (``--judge-min-agreement``)."""

JudgeKey = tuple[str, str]
"""(judge model, rubric hash)."""


@dataclass(frozen=True, slots=True)
class Agreement:
    """A judge's record on one dimension against human labels."""

    dimension: str
    model: str
    rubric_hash: str
    judged: int
    """Judge grades given (any verdict)."""
    unknown: int
    """Of which ``unknown``."""
    pairs: tuple[tuple[Verdict, Verdict], ...]
    """(judge, human) verdicts where both said pass or fail."""

    @property
    def labels(self) -> int:
        """How many judge verdicts have a human label to compare with."""
        return len(self.pairs)

    @property
    def agreement(self) -> float | None:
        """Share of pairs where judge and human agree (None without pairs)."""
        if not self.pairs:
            return None
        return sum(j == h for j, h in self.pairs) / len(self.pairs)

    @property
    def kappa(self) -> float | None:
        """Cohen's kappa of the pairs; None when chance agreement is total (one class only)."""
        return cohen_kappa(self.pairs)

    @property
    def unknown_rate(self) -> float | None:
        """Share of the judge's grades that were ``unknown``."""
        return self.unknown / self.judged if self.judged else None

    def calibrated(
        self, min_labels: int = MIN_LABELS, min_agreement: float = MIN_AGREEMENT
    ) -> bool:
        """Whether this record lets the judge gate (``min_labels == 0``: trusted as is)."""
        if min_labels <= 0:
            return True
        agreement = self.agreement
        return self.labels >= min_labels and agreement is not None and agreement > min_agreement


_GRADED = (Verdict.PASS, Verdict.FAIL)
"""The verdicts a judge and a human are compared on."""


People = dict[str, dict[str, Verdict]]
"""What people said of one trial: by labeller, by dimension (``""``: the whole trial)."""


def labelled_trials(labels: Iterable[LabelRecord]) -> dict[tuple[str, str, int], People]:
    """Each labelled trial (run, case id, index) with its pass and fail labels, by person.

    An unsure label compares with nothing: it is left out.
    """
    out: dict[tuple[str, str, int], People] = {}
    for label in labels:
        if label.verdict in _GRADED:
            person = out.setdefault((label.run, label.case_id, label.idx), {})
            person.setdefault(label.labeller, {})[label.dimension] = label.verdict
    return out


def people_verdict(people: Mapping[str, Mapping[str, Verdict]], dimension: str) -> Verdict | None:
    """What people said of a trial on ``dimension``: pass or fail by their majority.

    Each person counts once: their label of the dimension, else their label of the
    whole trial. A tie, or nobody: None. So two people labelling ten trials are ten
    comparisons for a judge, not twenty, and their disagreements are no one's verdict.
    """
    said = [v for by in people.values() if (v := by.get(dimension, by.get(""))) is not None]
    passes = said.count(Verdict.PASS)
    if not said or passes * 2 == len(said):
        return None
    return Verdict.PASS if passes * 2 > len(said) else Verdict.FAIL


def agreements(store: Store, run: str | None = None) -> list[Agreement]:
    """Each judge's record per dimension, over one run or (None) every run in the store."""
    people = labelled_trials(store.labels(run))
    judged: dict[tuple[str, str, str], list[tuple[Verdict, Verdict | None]]] = {}
    for name in [run] if run is not None else store.runs():
        for trial in store.trials(name):
            for grade in trial.grades:
                meta = grade.meta
                if not grade.grader.startswith("judge:") or "rubric_hash" not in meta:
                    continue
                dimension = meta["dimension"]
                human = people_verdict(people.get((name, trial.case_id, trial.idx), {}), dimension)
                judge = (dimension, meta["model"], meta["rubric_hash"])
                judged.setdefault(judge, []).append((grade.verdict, human))
    return [
        Agreement(
            dimension,
            model,
            rubric_hash,
            judged=len(verdicts),
            unknown=sum(j is Verdict.UNKNOWN for j, _ in verdicts),
            pairs=tuple((j, h) for j, h in verdicts if j in _GRADED and h is not None),
        )
        for (dimension, model, rubric_hash), verdicts in sorted(judged.items())
    ]


def failed_checks(store: Store) -> dict[JudgeKey, str]:
    """The judges whose latest ``replay judge-check`` failed, each with why it is advisory."""
    return {key: check.reason for key, check in store.judge_checks().items() if not check.passed}


def calibrated_judges(
    store: Store, min_labels: int = MIN_LABELS, min_agreement: float = MIN_AGREEMENT
) -> frozenset[JudgeKey] | None:
    """The (model, rubric hash) pairs that may gate; None when every judge may (no minimum).

    A judge whose latest ``replay judge-check`` failed may not, whatever its agreement
    (``min_labels == 0`` trusts every judge as it is, that one too).
    """
    if min_labels <= 0:
        return None
    failed = failed_checks(store)
    return frozenset(
        (a.model, a.rubric_hash)
        for a in agreements(store)
        if a.calibrated(min_labels, min_agreement) and (a.model, a.rubric_hash) not in failed
    )


@dataclass(frozen=True, slots=True)
class Pending:
    """A judge grade of ``unknown`` that no human has labelled yet."""

    case_id: str
    idx: int
    dimension: str
    reason: str
    cassette: str | None


def review_queue(store: Store, run: str) -> list[Pending]:
    """The run's ``unknown`` judge grades still waiting for a human label."""
    labelled = {(label.case_id, label.idx, label.dimension) for label in store.labels(run)}
    queue = []
    for trial in store.trials(run):
        for grade in trial.grades:
            if not grade.grader.startswith("judge:") or grade.verdict is not Verdict.UNKNOWN:
                continue
            dimension = grade.grader.removeprefix("judge:")
            key = (trial.case_id, trial.idx)
            if (*key, dimension) in labelled or (*key, "") in labelled:
                continue
            reason = "; ".join(grade.evidence) or "(no reason)"
            queue.append(Pending(*key, dimension, reason, trial.cassette))
    return queue


@dataclass(frozen=True, slots=True)
class JudgeAgreement:
    """How a run's judge agrees with human labels (``replay judge-agreement``).

    Attributes:
        run: The run.
        dimensions: Per judged dimension, a dict: ``dimension``, ``model``,
            ``rubric_hash``, ``judged``, ``labels``, ``agreement``, ``kappa``,
            ``unknown_rate`` (this run's), ``calibrated`` and ``store_labels``,
            ``store_agreement`` (over every run in the store), ``judge_check``
            (its latest ``replay judge-check``: ``passed``, ``checked``, ``reason``;
            None if never checked) and ``advisory`` (why it is advisory: a failed
            judge check, ``advisory: judge-check found ...``, or too few agreeing
            labels; None when calibrated).
        review_queue: The unknown judge grades no human has labelled yet.
        min_labels: What calibration asked for.
        min_agreement: What calibration asked for.
        people: How far the run's labellers agree with each other.
    """

    run: str
    dimensions: list[dict[str, Any]]
    review_queue: list[Pending]
    min_labels: int
    min_agreement: float
    people: LabelAgreement | None = None
    """How far the people who labelled the run agree with each other (``label_agreement``)."""

    def to_json(self) -> dict[str, Any]:
        """As JSON-ready data (what ``--json`` prints)."""
        pending = [
            {
                "trial": f"{p.case_id}#{p.idx}",
                "dimension": p.dimension,
                "reason": p.reason,
                "cassette": p.cassette,
            }
            for p in self.review_queue
        ]
        people = self.people.to_json() if self.people is not None else None
        return {
            "run": self.run,
            "dimensions": self.dimensions,
            "review_queue": pending,
            "people": people,
        }


def judge_agreement(
    store: Store,
    run: str,
    *,
    min_labels: int = MIN_LABELS,
    min_agreement: float = MIN_AGREEMENT,
) -> JudgeAgreement:
    """Agreement and Cohen's kappa between the judge and human labels in ``run``.

    Raises:
        ConfigError: No such run in the store.
    """
    if store.run(run) is None:
        raise ConfigError(f"no run {run!r} in {store.path}")
    everywhere = {(a.dimension, a.model, a.rubric_hash): a for a in agreements(store)}
    checks = store.judge_checks()
    rows: list[dict[str, Any]] = []
    for here in agreements(store, run):
        overall = everywhere[(here.dimension, here.model, here.rubric_hash)]
        check = checks.get((here.model, here.rubric_hash))
        labelled = overall.calibrated(min_labels, min_agreement)
        if check is not None and not check.passed and min_labels > 0:
            advisory: str | None = check.reason
        elif not labelled:
            advisory = f"advisory until {min_labels} labels agree above {min_agreement:g}"
        else:
            advisory = None
        rows.append(
            {
                "dimension": here.dimension,
                "model": here.model,
                "rubric_hash": here.rubric_hash,
                "judged": here.judged,
                "labels": here.labels,
                "agreement": here.agreement,
                "kappa": here.kappa,
                "unknown_rate": here.unknown_rate,
                "calibrated": advisory is None,
                "store_labels": overall.labels,
                "store_agreement": overall.agreement,
                "judge_check": None
                if check is None
                else {"passed": check.passed, "checked": check.checked, "reason": check.reason},
                "advisory": advisory,
            }
        )
    return JudgeAgreement(
        run,
        rows,
        review_queue(store, run),
        min_labels,
        min_agreement,
        label_agreement(store, run),
    )
