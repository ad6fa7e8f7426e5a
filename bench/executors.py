"""The same run on local worker processes, Ray and Dask: wall time against the ideal.

1,600 trials (``--quick``: 320) of an agent making 10 LLM calls each to a
model that answers after 50 ms (``_slow_llm``: asyncio, next to no CPU), so
a trial waits 0.5 s; 64 trials in flight over 4 worker processes. The ideal wall
time is trials x 0.5 s / 64; the per-trial overhead is (wall - ideal) x
concurrency / trials. The model runs in a process of its own. Every trial
must pass.

Ray and Dask run when installed (``pip install 'agent-replay[ray,dask]'``);
their start-up (a local cluster) is timed apart.

Run alone: ``python -m bench.executors [--quick]``.
"""

from __future__ import annotations

import argparse
import functools
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

from . import _slow_llm
from ._report import ratio, secs, table

TRIALS, QUICK_TRIALS = 1600, 320
CONCURRENCY = 64
WORKERS = 4
LATENCY = 0.05
CALLS = 10
AGENT = "agent"
"""The trial's agent (``bench._trial_agent``): the blocking ``agent`` (measured faster here
than ``async_agent``: httpx's async stack costs more CPU per call, and the run is CPU-bound)."""
TARGET = 0.10
"""Local must come within 10% of the ideal."""

CASE = """id: bench
instruction: Benchmark trial.
fixture: fixture.sql
assert:
  - notes.count() == 1
"""


@dataclass(frozen=True)
class Point:
    """One executor's run."""

    executor: str
    trials: int
    passed: int
    wall_s: float
    startup_s: float

    @property
    def ideal_s(self) -> float:
        """Trials x latency / concurrency."""
        return self.trials * CALLS * LATENCY / CONCURRENCY

    @property
    def efficiency(self) -> float:
        """Ideal over measured wall time."""
        return self.ideal_s / self.wall_s

    @property
    def overhead_s(self) -> float:
        """Per-trial time beyond waiting for the model."""
        return max(0.0, self.wall_s - self.ideal_s) * CONCURRENCY / self.trials


def _first(first: list[float], what: str | None, done: int, total: int) -> None:
    if done == 1:
        first.append(time.perf_counter())


def _available(module: str) -> bool:
    try:
        __import__(module)
    except ImportError:
        return False
    return True


def run(quick: bool = False) -> list[Point]:
    """Run the same trials on each available executor."""
    from replay._runner import RunSpec, execute
    from replay._store import Store

    trials = QUICK_TRIALS if quick else TRIALS
    server, url = _slow_llm.start(LATENCY)
    executors = ["local"] + [
        e for e, m in (("ray", "ray"), ("dask", "distributed")) if _available(m)
    ]
    points = []
    try:
        with tempfile.TemporaryDirectory() as tmp:
            root = Path(tmp)
            (root / "fixture.sql").write_text(
                "CREATE TABLE notes (id INTEGER PRIMARY KEY, text TEXT);"
            )
            (root / "case.yaml").write_text(CASE)
            for executor in executors:
                spec = RunSpec(
                    name=executor,
                    cases=[str(root / "case.yaml")],
                    mode="sandbox",
                    trials=trials,
                    agent=f"bench._trial_agent:{AGENT}",
                    tools="bench._trial_agent:tools",
                    llm_url=url,
                    concurrency=CONCURRENCY,
                    executor=executor,  # type: ignore[arg-type]
                    workers=WORKERS,
                )
                store = Store(root / f"{executor}.db")
                started = time.perf_counter()
                first: list[float] = []
                execute(spec, store, on_trial=functools.partial(_first, first))
                ended = time.perf_counter()
                # Start-up: until the first trial could have finished.
                startup = max(0.0, (first[0] if first else ended) - started - CALLS * LATENCY)
                passed = sum(t["verdict"] == "pass" for t in store.trials(executor))
                points.append(Point(executor, trials, passed, ended - started - startup, startup))
    finally:
        server.kill()
    return points


def report(points: list[Point]) -> str:
    """Wall time against the ideal, per executor."""
    rows = [
        [p.executor, f"{p.passed}/{p.trials}", secs(p.wall_s), secs(p.ideal_s),
         f"{p.efficiency:.0%}", secs(p.overhead_s), secs(p.startup_s)]
        for p in points
    ]  # fmt: skip
    head = (
        f"{points[0].trials:,} trials x {CALLS} LLM calls of {LATENCY * 1000:.0f} ms, "
        f"{CONCURRENCY} in flight over {WORKERS} workers"
    )
    lines = [table(head, ["executor", "passed", "wall", "ideal", "efficiency",
                          "overhead/trial", "start-up"], rows)]  # fmt: skip
    local = points[0]
    for p in points[1:]:
        lines.append(f"{p.executor}: {ratio(p.wall_s, local.wall_s)} the local wall time")
    return "\n".join(lines)


def local_ok(points: list[Point]) -> bool:
    """Local within ``TARGET`` of the ideal, every trial passed."""
    local = points[0]
    return local.passed == local.trials and local.wall_s <= local.ideal_s * (1 + TARGET)


def main() -> None:
    """Run this benchmark alone."""
    parser = argparse.ArgumentParser(prog="python -m bench.executors", description=__doc__)
    parser.add_argument("--quick", action="store_true", help=f"{QUICK_TRIALS} trials")
    args = parser.parse_args()
    points = run(quick=args.quick)
    print(report(points))
    print(f"local within {TARGET:.0%} of the ideal: {'yes' if local_ok(points) else 'NO'}")


if __name__ == "__main__":
    main()
