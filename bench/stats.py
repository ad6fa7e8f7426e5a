"""Do the intervals keep their coverage, and does the paired gate keep its power? (seeded)

Not a timing: a simulation, seeded, so every run prints the same figures.

Coverage. A suite of m cases (20, 50, 200) is drawn from a population of cases
(``SPREAD``: 15% that always fail, 25% that always pass, 60% with a rate drawn from
Beta(2, 2)), each run 1-10 times (uniformly, per case); 2,000 suites per size. The
estimand is the population's expected pass^k, ``E[p^k]`` (what the suite stands for),
computed exactly. Each interval is counted as covering when it holds that value. Ours
(``replay.stats.suite_interval`` over the cases' unbiased pass^k) beside the
incumbents: the plug-in ``(c/n)^k`` with a normal interval over cases, a plain
percentile bootstrap over cases of the unbiased estimate, and Wilson's interval on the
pooled trials (pass^1 only: every trial counted as independent).

Power. 50 cases x 8 trials in a baseline and a candidate run; the candidate's true
pass^1 is 10 points lower (``DROP``: every case's rate scaled down, or ``BROKEN``: some
cases break to 0), or the same (A/A). The paired gate (``--max-drop 0.05`` at the
defaults) should fail in >= 80% of drops and in <= 5% of A/As; beside it the gate as it
was (the point drop above 0.05), the unpaired test over cases (Welch's t on the cases'
pass rates) and the pooled two-proportion test over trials (``two_proportion_test``).

Run alone: ``python -m bench.stats [--quick]``.
"""

from __future__ import annotations

import argparse
import math
import random
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from replay import CaseCounts, Thresholds, compare_counts, two_proportion_test
from replay.results._gate import _drop_check
from replay.stats import suite_interval, wilson_interval

from ._report import table

SPREAD = (0.15, 0.25, 2.0, 2.0)
"""(share always failing, share always passing, Beta a, Beta b) of the rest."""
HARD = (0.3, 0.1, 1.0, 3.0)
"""A spread outside the checked one, shown for what it is: a hard suite whose few cases
that always pass carry pass^k (20 cases may hold none of them)."""
SIZES = (20, 50, 200)
KS = (1, 2, 4)
TRIALS = (1, 10)
"""Trials per case: drawn uniformly from this range, per case."""
SUITES, QUICK_SUITES = 2000, 400
BOOTSTRAP = 400
"""Resamples of the plain percentile bootstrap."""
COVERAGE = (0.93, 0.97)
"""The band a 95% interval's coverage must fall in."""
DROP = 0.10
"""The true fall of pass^1 under a drop model."""


@dataclass(frozen=True)
class Setting:
    """Runs of ``cases`` x ``trials`` gated at ``--max-drop max_drop``, under a model."""

    model: str
    cases: int = 50
    trials: int = 8
    max_drop: float = 0.05


SETTINGS = (
    Setting("10-point drop, every case scaled"),
    Setting("10-point drop, some cases broken"),
    Setting("no drop (A/A)"),
    # The measurement: two halves of tau-bench's file, 50 x 2, --max-drop 0.01.
    Setting("no drop (A/A)", trials=2, max_drop=0.01),
)
RUNS, QUICK_RUNS = 1000, 300


def truth(k: int, spread: tuple[float, float, float, float] = SPREAD) -> float:
    """The population's expected pass^k: ``E[p^k]`` under the spread."""
    zero, one, a, b = spread
    moment = math.prod((a + i) / (a + b + i) for i in range(k))
    return one + (1 - zero - one) * moment


def draw_rate(rng: random.Random, spread: tuple[float, float, float, float] = SPREAD) -> float:
    """One case's pass rate, drawn from the spread."""
    zero, one, a, b = spread
    u = rng.random()
    return 0.0 if u < zero else 1.0 if u < zero + one else rng.betavariate(a, b)


def trials(rng: random.Random, p: float, n: int) -> int:
    """Passes of n trials at rate p."""
    return sum(rng.random() < p for _ in range(n))


def hat(c: int, n: int, k: int) -> float:
    """The unbiased pass^k, ``C(c,k)/C(n,k)``."""
    return math.comb(c, k) / math.comb(n, k)


def _normal(values: Sequence[float]) -> tuple[float, float]:
    m = len(values)
    mean = sum(values) / m
    sd = math.sqrt(sum((v - mean) ** 2 for v in values) / (m - 1))
    return mean - 1.96 * sd / math.sqrt(m), mean + 1.96 * sd / math.sqrt(m)


def _bootstrap(rng: random.Random, values: Sequence[float]) -> tuple[float, float]:
    m = len(values)
    means = sorted(sum(rng.choices(values, k=m)) / m for _ in range(BOOTSTRAP))
    return means[int(0.025 * BOOTSTRAP)], means[int(0.975 * BOOTSTRAP) - 1]


@dataclass(frozen=True)
class Coverage:
    """How often each method's interval held the true value, at one size and k."""

    cases: int
    k: int
    suites: int
    ours: float
    plug_in: float | None
    bootstrap: float | None
    pooled: float | None


def coverage(
    cases: int,
    k: int,
    suites: int,
    *,
    seed: int = 0,
    incumbents: bool = True,
    spread: tuple[float, float, float, float] = SPREAD,
) -> Coverage:
    """Simulate ``suites`` suites of ``cases`` cases; the share of intervals covering."""
    rng = random.Random(f"{seed}-{cases}-{k}-{spread}")
    target = truth(k, spread)
    hits = {"ours": 0, "plug": 0, "boot": 0, "pooled": 0}
    used = 0
    for _ in range(suites):
        counts = []
        for _ in range(cases):
            n = rng.randint(*TRIALS)
            counts.append((trials(rng, draw_rate(rng, spread), n), n))
        counts = [(c, n) for c, n in counts if n >= k]
        if len(counts) < 2:
            continue
        used += 1
        values = [hat(c, n, k) for c, n in counts]
        hits["ours"] += suite_interval(values).contains(target)
        if incumbents:
            low, high = _normal([(c / n) ** k for c, n in counts])
            hits["plug"] += low <= target <= high
            low, high = _bootstrap(rng, values)
            hits["boot"] += low <= target <= high
            if k == 1:
                pooled = wilson_interval(sum(c for c, _ in counts), sum(n for _, n in counts))
                hits["pooled"] += pooled.contains(target)
    return Coverage(
        cases,
        k,
        used,
        hits["ours"] / used,
        hits["plug"] / used if incumbents else None,
        hits["boot"] / used if incumbents else None,
        hits["pooled"] / used if incumbents and k == 1 else None,
    )


def scaled(p: float, rng: random.Random) -> float:
    """``DROP``: every case's rate scaled so that the expected pass^1 falls by ``DROP``."""
    return p * (1 - DROP / truth(1))


def broken(p: float, rng: random.Random) -> float:
    """``BROKEN``: a share of the cases break (rate 0) so that pass^1 falls by ``DROP``."""
    return 0.0 if rng.random() < DROP / truth(1) else p


def same(p: float, rng: random.Random) -> float:
    """A/A: the candidate is the baseline."""
    return p


MODELS: dict[str, Callable[[float, random.Random], float]] = {
    "10-point drop, every case scaled": scaled,
    "10-point drop, some cases broken": broken,
    "no drop (A/A)": same,
}


@dataclass(frozen=True)
class Power:
    """How often each gate or test called a drop, over ``runs`` simulated pairs of runs."""

    setting: Setting
    runs: int
    fails: float
    """Ours: the paired gate fails (exit 1)."""
    undecided: float
    """Ours: the gate cannot decide (exit 3)."""
    holds: float
    point: float
    """The gate as it was: the point drop above the setting's ``max_drop``."""
    welch: float
    """Welch's t over the cases' pass rates, one-sided at 2.5%: unpaired, by case."""
    pooled: float
    """The pooled two-proportion test over trials, a drop at p < 0.05."""


def power(setting: Setting, runs: int, *, seed: int = 0, incumbents: bool = True) -> Power:
    """Simulate ``runs`` pairs of runs in a setting; what each gate or test calls."""
    rng = random.Random(f"{seed}-{setting}")
    move = MODELS[setting.model]
    cases, n = setting.cases, setting.trials
    thresholds = Thresholds(max_drop=setting.max_drop)
    tally = {"fail": 0, "undecided": 0, "hold": 0, "point": 0, "welch": 0, "pooled": 0}
    for _ in range(runs):
        a, b = [], []
        for i in range(cases):
            p = draw_rate(rng)
            c = trials(rng, p, n)
            a.append(CaseCounts(f"c{i}", {"pass": c, "fail": n - c}))
            c = trials(rng, move(p, rng), n)
            b.append(CaseCounts(f"c{i}", {"pass": c, "fail": n - c}))
        check = _drop_check(compare_counts(a, b, k=1), thresholds, ())
        tally["hold" if check.holds else "undecided" if check.undecided else "fail"] += 1
        if incumbents:
            ra, rb = [x.c / x.n for x in a], [x.c / x.n for x in b]
            tally["point"] += (sum(ra) - sum(rb)) / cases > setting.max_drop
            tally["welch"] += _welch(ra, rb) > 1.96
            ca, cb = sum(x.c for x in a), sum(x.c for x in b)
            tally["pooled"] += ca > cb and two_proportion_test(ca, cases * n, cb, cases * n) < 0.05
    return Power(
        setting,
        runs,
        tally["fail"] / runs,
        tally["undecided"] / runs,
        tally["hold"] / runs,
        tally["point"] / runs,
        tally["welch"] / runs,
        tally["pooled"] / runs,
    )


def _welch(a: Sequence[float], b: Sequence[float]) -> float:
    """Welch's t of mean(a) - mean(b) (a drop from a to b is positive)."""
    m = len(a)
    mean_a, mean_b = sum(a) / m, sum(b) / m
    var_a = sum((x - mean_a) ** 2 for x in a) / (m - 1)
    var_b = sum((x - mean_b) ** 2 for x in b) / (m - 1)
    se = math.sqrt((var_a + var_b) / m)
    return (mean_a - mean_b) / se if se else 0.0


@dataclass(frozen=True)
class Result:
    """The whole simulation."""

    coverage: list[Coverage]
    power: list[Power]
    hard: list[Coverage]
    """Coverage on ``HARD``: shown, not checked."""

    @property
    def ok(self) -> bool:
        """Every coverage of ours in the band; the gate's power and A/A rate on target."""
        low, high = COVERAGE
        covered = all(low <= c.ours <= high for c in self.coverage)
        spread = self.power[0]  # the drop every case shares: the one the gate must see
        same_ = [p for p in self.power if p.setting.model == "no drop (A/A)"]
        return covered and spread.fails >= 0.8 and all(p.fails <= 0.05 for p in same_)


def run(quick: bool = False, seed: int = 0, smoke: bool = False) -> Result:
    """Simulate coverage at every size and k, then the gate's power under each model.

    ``smoke``: a tenth of ``--quick``'s simulations (that it runs; its figures are noise).
    """
    suites = QUICK_SUITES // 10 if smoke else QUICK_SUITES if quick else SUITES
    runs = QUICK_RUNS // 10 if smoke else QUICK_RUNS if quick else RUNS
    cover = [coverage(m, k, suites, seed=seed) for m in SIZES for k in KS]
    powers = [power(setting, runs, seed=seed) for setting in SETTINGS]
    hard = [coverage(20, k, suites, seed=seed, spread=HARD) for k in KS]
    return Result(cover, powers, hard)


def _pct(value: float | None) -> str:
    return "-" if value is None else f"{value:.1%}"


def report(result: Result) -> str:
    """Two tables: coverage by size and k, then power by model."""
    low, high = COVERAGE
    rows = [
        [
            str(c.cases),
            f"pass^{c.k}",
            f"{truth(c.k):.3f}",
            _pct(c.ours) + ("" if low <= c.ours <= high else " MISSED"),
            _pct(c.plug_in),
            _pct(c.bootstrap),
            _pct(c.pooled),
        ]
        for c in result.coverage
    ]
    first = table(
        f"coverage of 95% intervals (target {low:.0%}-{high:.0%}), "
        f"{result.coverage[0].suites:,} suites each, {TRIALS[0]}-{TRIALS[1]} trials per case",
        ["cases", "figure", "true value", "ours", "plug-in, normal", "bootstrap", "pooled trials"],
        rows,
    )
    second = table(
        f"the paired gate, {result.power[0].runs:,} pairs of runs each (target: fails >= 80% "
        "of a drop every case shares, <= 5% of A/As)",
        [
            "model",
            "runs",
            "--max-drop",
            "gate fails",
            "cannot decide",
            "holds",
            "old gate fails",
            "Welch",
            "pooled",
        ],
        [
            [
                p.setting.model,
                f"{p.setting.cases} x {p.setting.trials}",
                f"{p.setting.max_drop}",
                _pct(p.fails),
                _pct(p.undecided),
                _pct(p.holds),
                _pct(p.point),
                _pct(p.welch),
                _pct(p.pooled),
            ]
            for p in result.power
        ],
    )
    third = table(
        f"outside the checked spread: a hard suite {HARD} (not a target)",
        ["cases", "figure", "true value", "ours", "plug-in, normal", "bootstrap", "pooled trials"],
        [
            [
                str(c.cases),
                f"pass^{c.k}",
                f"{truth(c.k, HARD):.3f}",
                _pct(c.ours),
                _pct(c.plug_in),
                _pct(c.bootstrap),
                _pct(c.pooled),
            ]
            for c in result.hard
        ],
    )
    return f"{first}\n\n{third}\n\n{second}"


def main() -> None:
    """Run alone: ``python -m bench.stats [--quick]``."""
    parser = argparse.ArgumentParser(prog="python -m bench.stats", description=__doc__)
    parser.add_argument("--quick", action="store_true", help="fewer simulated suites")
    args = parser.parse_args()
    print(report(run(quick=args.quick)))


if __name__ == "__main__":
    main()
