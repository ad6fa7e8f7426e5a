"""The noise floor: how far two runs of one version differ by chance (``replay noise``)."""

from __future__ import annotations

import math
from dataclasses import dataclass

from ._metrics import CONFIDENCE
from ._paired import PairedFigure, compare_runs
from ._pins import pin_differences
from ._stats import mean_and_variance
from ._store import Store


@dataclass(frozen=True, slots=True)
class CaseNoise:
    """One case's pass rate in both runs."""

    case_id: str
    pass1_a: float
    pass1_b: float
    expected: float
    """The standard deviation of the change trial noise alone gives this case:
    ``sqrt(p(1-p)(1/n_a + 1/n_b))`` at its pooled rate p."""

    @property
    def change(self) -> float:
        """B's pass^1 minus A's."""
        return self.pass1_b - self.pass1_a


@dataclass(frozen=True, slots=True)
class NoiseFloor:
    """Two runs of the same version compared: what a "change" of this suite is made of."""

    a: str
    b: str
    cases: list[CaseNoise]
    """Every case both runs graded, largest change first."""
    figures: list[PairedFigure]
    """pass^1 and pass^k in both runs, each with the interval of its change."""
    flipped: list[str]
    """Cases whose pass^1 differs between the runs."""
    all_pass_flipped: list[str]
    """Cases whose every trial passed in one run and not in the other."""
    spread: float
    """The standard deviation of the per-case change of pass^1."""
    pins: dict[str, str]
    """Pins that differ between the runs (none, for two runs of one version)."""

    @property
    def floor(self) -> float | None:
        """The half-width of the pass^1 change's interval: what a change must exceed."""
        if not self.figures:
            return None
        interval = self.figures[0].interval
        return (interval.high - interval.low) / 2


def noise(store: Store, a: str, b: str, *, confidence: float = CONFIDENCE) -> NoiseFloor:
    """Measure the run-to-run noise of a suite from two runs of the same version.

    Run it once on two runs of one agent version to learn how large a difference
    between versions must be before it means anything.

    Raises:
        ConfigError: A run is not in the store.
    """
    comparison = compare_runs(store, a, b, confidence=confidence)
    cases = []
    for change in comparison.changes:
        if change.pass1_a is None or change.pass1_b is None:
            continue
        na, nb = change.a.n, change.b.n
        pooled = (change.a.c + change.b.c) / (na + nb)
        expected = math.sqrt(pooled * (1 - pooled) * (1 / na + 1 / nb))
        cases.append(CaseNoise(change.case_id, change.pass1_a, change.pass1_b, expected))
    cases.sort(key=lambda c: (-abs(c.change), c.case_id))
    flipped = [c.case_id for c in cases if c.change != 0]
    all_pass = [c.case_id for c in cases if (c.pass1_a == 1.0) != (c.pass1_b == 1.0)]
    spread = math.sqrt(mean_and_variance([c.change for c in cases])[1]) if cases else 0.0
    runs = {name: store.run(name) for name in (a, b)}
    pins = pin_differences(runs[a].pins, runs[b].pins)  # type: ignore[union-attr]
    return NoiseFloor(a, b, cases, comparison.figures, flipped, all_pass, spread, pins)
