"""How far people agree with each other: Cohen's kappa for two, Krippendorff's alpha for more.

Two people labelling the same trials independently (``replay label --by``)
measure the task as much as the agent: where careful people disagree, the
case is ambiguous, and no grader can be right about it. A *unit* is one
trial's label for one dimension (``""``: the whole trial); only ``pass`` and
``fail`` labels are compared (an unsure label says the labeller could not tell,
and is left out, as a missing value is).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from itertools import permutations
from typing import Any

from recorder import ConfigError

from ..graders import Verdict
from ._store import Store

_COMPARED = (Verdict.PASS, Verdict.FAIL)

Unit = tuple[str, int, str]
"""(case id, trial index, dimension)."""


def cohen_kappa(pairs: Iterable[tuple[Verdict | str, Verdict | str]]) -> float | None:
    """Cohen's kappa for two raters: (p_o - p_e) / (1 - p_e)."""
    pairs = list(pairs)
    if not pairs:
        return None
    n = len(pairs)
    classes = {v for pair in pairs for v in pair}
    observed = sum(a == b for a, b in pairs) / n
    expected = sum(
        (sum(a == c for a, _ in pairs) / n) * (sum(b == c for _, b in pairs) / n) for c in classes
    )
    if expected == 1.0:
        return None
    return (observed - expected) / (1.0 - expected)


def krippendorff_alpha(units: Iterable[Sequence[Any]]) -> float | None:
    """Krippendorff's alpha for nominal values: 1 - observed / expected disagreement.

    Each unit is the values its raters gave (any number; a missing one is simply
    absent). Units with fewer than two values are unpairable and left out. None
    when there is nothing to compare or only one value was ever given (no
    disagreement is possible, so none is expected).
    """
    coincidences: dict[tuple[Any, Any], float] = {}
    for values in units:
        m = len(values)
        if m < 2:
            continue
        for a, b in permutations(values, 2):
            coincidences[(a, b)] = coincidences.get((a, b), 0.0) + 1 / (m - 1)
    totals: dict[Any, float] = {}
    for (a, _), count in coincidences.items():
        totals[a] = totals.get(a, 0.0) + count
    n = sum(totals.values())
    expected = sum(totals[a] * totals[b] for a in totals for b in totals if a != b)
    if n <= 1 or expected == 0:
        return None
    observed = sum(count for (a, b), count in coincidences.items() if a != b)
    return 1.0 - (n - 1) * observed / expected


@dataclass(frozen=True, slots=True)
class Disagreement:
    """A trial that people labelled differently: read it as an ambiguous task."""

    case_id: str
    idx: int
    dimension: str
    labels: Mapping[str, Verdict]
    """Each labeller's verdict (``""``: unnamed)."""
    notes: Mapping[str, str]
    """What each labeller wrote beside it, where they did."""


@dataclass(frozen=True, slots=True)
class LabelAgreement:
    """How a run's labellers agree (``replay label-agreement``).

    Attributes:
        run: The run.
        labellers: Who labelled, sorted (``""``: labels given without ``--by``).
        units: Trials (per dimension) labelled pass or fail by at least two people.
        agreement: Share of those units on which everyone agreed.
        kappa: Cohen's kappa, when exactly two people labelled (over the units both did).
        alpha: Krippendorff's alpha (nominal) over every labeller.
        disagreements: The units people labelled differently.
    """

    run: str
    labellers: tuple[str, ...]
    units: int
    agreement: float | None
    kappa: float | None
    alpha: float | None
    disagreements: tuple[Disagreement, ...]

    def to_json(self) -> dict[str, Any]:
        """As JSON-ready data (what ``--json`` prints)."""
        return {
            "run": self.run,
            "labellers": list(self.labellers),
            "units": self.units,
            "agreement": self.agreement,
            "kappa": self.kappa,
            "alpha": self.alpha,
            "disagreements": [
                {
                    "trial": f"{d.case_id}#{d.idx}",
                    "dimension": d.dimension,
                    "labels": {k: v.value for k, v in d.labels.items()},
                    "notes": dict(d.notes),
                }
                for d in self.disagreements
            ],
        }


def _units(store: Store, run: str) -> dict[Unit, dict[str, tuple[Verdict, str]]]:
    units: dict[Unit, dict[str, tuple[Verdict, str]]] = {}
    for label in store.labels(run):
        if label.verdict in _COMPARED:
            unit = (label.case_id, label.idx, label.dimension)
            units.setdefault(unit, {})[label.labeller] = (label.verdict, label.note)
    return units


def label_agreement(store: Store, run: str) -> LabelAgreement:
    """Agreement between the people who labelled ``run``'s trials.

    Raises:
        ConfigError: No such run in the store.
    """
    if store.run(run) is None:
        raise ConfigError(f"no run {run!r} in {store.path}; see `replay runs`")
    units = _units(store, run)
    labellers = tuple(sorted({who for by in units.values() for who in by}))
    shared = {unit: by for unit, by in units.items() if len(by) >= 2}
    kappa = None
    if len(labellers) == 2:
        first, second = labellers
        kappa = cohen_kappa((by[first][0], by[second][0]) for by in shared.values())
    split = [
        Disagreement(
            *unit,
            labels={who: verdict for who, (verdict, _) in sorted(by.items())},
            notes={who: note for who, (_, note) in sorted(by.items()) if note},
        )
        for unit, by in sorted(shared.items())
        if len({verdict for verdict, _ in by.values()}) > 1
    ]
    return LabelAgreement(
        run,
        labellers,
        len(shared),
        1 - len(split) / len(shared) if shared else None,
        kappa,
        krippendorff_alpha([v.value for v, _ in by.values()] for by in units.values()),
        tuple(split),
    )


def ambiguous_cases(store: Store, runs: Sequence[str]) -> dict[str, list[str]]:
    """The cases behind trials people labelled differently over ``runs``.

    Each with those trials, as ``RUN CASE#INDEX``.
    """
    out: dict[str, list[str]] = {}
    for run in runs:
        for unit, by in sorted(_units(store, run).items()):
            if len({verdict for verdict, _ in by.values()}) > 1:
                out.setdefault(unit[0], []).append(f"{run} {unit[0]}#{unit[1]}")
    return out
