"""The same run on local worker processes, Ray and Dask: wall time against the ideal.

1,600 trials (``--quick``: 320) of an agent making 10 LLM calls each to a
model that answers after 50 ms (``_slow_llm``: next to no CPU), so a trial
waits 0.5 s; 64 trials in flight over 4 worker processes. The ideal wall
time is trials x 0.5 s / 64; the per-trial overhead is (wall - ideal) x
concurrency / trials. The model runs in a process of its own. Every trial
must pass.

The incumbent, measured in the same run: ``bare``, the same agent called
in a plain process pool of as many processes and threads, with nothing
around it (no recording, world, grading or store): what this machine gives
an agent at all. Two agents (``_trial_agent``): ``agent`` speaks
``http.client``; ``httpx_agent`` speaks httpx, whose own CPU (~1 ms a
call here, three times http.client's) makes 64 trials in flight CPU-bound
on two cores even bare. The target is checked on ``agent``.

Ray and Dask run when installed (``pip install 'agent-replay[ray,dask]'``),
with ``agent``; their start-up (a local cluster) is timed apart. Where
bubblewrap runs, ``agent`` runs walled too (``--isolation process``, the
sandbox's default there): a fifth of the trials over 2 workers, 8 in flight
(the target's) and then 64 (``--quick``: a tenth, 4 in flight), each a child
forked from a zygote (start-up: the zygotes', one per trial in flight).

Run alone: ``python -m bench.executors [--quick]``.
"""

from __future__ import annotations

import argparse
import functools
import multiprocessing
import tempfile
import time
from concurrent.futures import ProcessPoolExecutor, ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from . import _slow_llm
from ._report import secs, table

TRIALS, QUICK_TRIALS, SMOKE_TRIALS = 1600, 320, 64
CONCURRENCY = 64
WORKERS = 4
WALLED_CONCURRENCY = 8
"""Walled trials in flight (over half the workers): each is a zygote's child, and a
zygote per trial in flight is started."""
LATENCY = 0.05
CALLS = 10
AGENTS = ("agent", "httpx_agent")
"""The trials' agents (``bench._trial_agent``); the first is checked against the target."""
EFFICIENCY_TARGET = 0.93
"""Local must reach 93% of the ideal (``agent``)."""
BARE_TARGET = {"agent": 1.03, "httpx_agent": 1.05}
"""Local may take at most this many times the bare agent's wall time, per agent."""
WALLED_TARGET = 0.80
"""Walled trials must reach 80% of the ideal."""
STORE_ROOT = Path(".replay")
"""Where the runs' stores and cassettes go (a temporary folder in it, removed after)."""

CASE = """id: bench
instruction: Benchmark trial.
fixture: fixture.sql
assert:
  - notes.count() == 1
"""


@dataclass(frozen=True)
class Point:
    """One executor's run."""

    agent: str
    executor: str
    trials: int
    passed: int
    wall_s: float
    startup_s: float
    concurrency: int = CONCURRENCY

    @property
    def ideal_s(self) -> float:
        """Trials x latency / concurrency."""
        return self.trials * CALLS * LATENCY / self.concurrency

    @property
    def efficiency(self) -> float:
        """Ideal over measured wall time."""
        return self.ideal_s / self.wall_s

    @property
    def overhead_s(self) -> float:
        """Per-trial time beyond waiting for the model."""
        return max(0.0, self.wall_s - self.ideal_s) * self.concurrency / self.trials


def _first(first: list[float], what: str | None, done: int, total: int) -> None:
    if done == 1:
        first.append(time.perf_counter())


class _BareEnv:
    """What a bare agent is given: the model's address; its tool call does nothing."""

    def __init__(self, llm_base_url: str) -> None:
        self.llm_base_url = llm_base_url

    def call_tool(self, name: str, arguments: dict[str, Any]) -> None:
        """Nothing to record or write."""


def _bare_share(agent: str, url: str, trials: int, threads: int) -> None:
    """One pool process's share: ``trials`` calls of the agent, ``threads`` at a time."""
    from . import _trial_agent  # imported by _warm already: nothing to load in the timed part

    run = getattr(_trial_agent, agent)
    env = _BareEnv(url)
    with ThreadPoolExecutor(threads) as pool:
        list(pool.map(lambda _: run("Benchmark trial.", env), range(trials)))


def _warm(_: int) -> None:
    from . import _trial_agent  # noqa: F401


def _bare(agent: str, url: str, trials: int) -> Point:
    """The incumbent: the agent alone in a process pool (start-up timed apart)."""
    context = multiprocessing.get_context("forkserver")
    started = time.perf_counter()
    with ProcessPoolExecutor(WORKERS, mp_context=context) as pool:
        list(pool.map(_warm, range(WORKERS)))
        ready = time.perf_counter()
        shares = [trials // WORKERS + (n < trials % WORKERS) for n in range(WORKERS)]
        threads = CONCURRENCY // WORKERS
        list(pool.map(_bare_share, [agent] * WORKERS, [url] * WORKERS, shares, [threads] * WORKERS))
        ended = time.perf_counter()
    return Point(agent, "bare", trials, trials, ended - ready, ready - started)


def _available(module: str) -> bool:
    try:
        __import__(module)
    except ImportError:
        return False
    return True


def run(quick: bool = False, smoke: bool = False) -> list[Point]:
    """Run the same trials bare and on each available executor, for each agent.

    ``smoke``: only that it runs (the test suite's check): ``SMOKE_TRIALS`` trials of the
    first agent, and no Ray or Dask (their clusters' start-up is most of it; ``tests/e2e``
    runs them).
    """
    trials = SMOKE_TRIALS if smoke else QUICK_TRIALS if quick else TRIALS
    server, url = _slow_llm.start(LATENCY)
    clusters = [
        e for e, m in (("ray", "ray"), ("dask", "distributed")) if _available(m) and not smoke
    ]
    points = []
    # Where `replay run` writes by default: under the working directory's .replay/. (On
    # this machine a new file costs 0.5 ms of CPU in /tmp, 0.09 ms in the project's folder;
    # the driver writes one cassette per trial.)
    STORE_ROOT.mkdir(exist_ok=True)
    try:
        with tempfile.TemporaryDirectory(prefix="bench-executors-", dir=STORE_ROOT) as tmp:
            root = Path(tmp)
            (root / "fixture.sql").write_text(
                "CREATE TABLE notes (id INTEGER PRIMARY KEY, text TEXT);"
            )
            (root / "case.yaml").write_text(CASE)
            for agent in AGENTS[:1] if smoke else AGENTS:  # (--smoke: that it runs)
                points.append(_bare(agent, url, trials))
                for executor in ["local", *(clusters if agent == AGENTS[0] else [])]:
                    points.append(_harness(root, agent, executor, url, trials))
            if _walls():  # fewer in flight: each is a sandbox (a zygote's child) of its own
                flights = (4,) if quick or smoke else (WALLED_CONCURRENCY, CONCURRENCY)
                walled = trials // 10 if quick or smoke else trials // 5
                for flight in flights:
                    points.append(_harness(root, AGENTS[0], "local", url, walled, flight))
    finally:
        server.kill()
    return points


def _walls() -> bool:
    from replay.agents import unavailable

    return unavailable() is None


def _harness(
    root: Path, agent: str, executor: str, url: str, trials: int, walled: int | None = None
) -> Point:
    """The trials as ``replay run`` runs them (start-up: until the first could have ended).

    ``walled``: behind walls (``--isolation process``), that many in flight.
    """
    from replay import AgentSettings, ExecutorSettings, LlmSettings, RunSpec, Store, execute

    name = f"{agent}-{executor}" + ("-walled" if walled else "")
    concurrency = walled or CONCURRENCY
    spec = RunSpec(
        name=name,
        cases=[str(root / "case.yaml")],
        mode="sandbox",
        trials=trials,
        agent=AgentSettings(
            f"bench._trial_agent:{agent}",
            "bench._trial_agent:tools",
            isolation="process" if walled else "none",
        ),
        llm=LlmSettings(url=url),
        executor=ExecutorSettings(
            executor,  # type: ignore[arg-type]
            workers=WORKERS // 2 if walled else WORKERS,
            concurrency=concurrency,
        ),
    )
    store = Store(root / f"{name}.db")
    started = time.perf_counter()
    first: list[float] = []
    execute(spec, store, on_trial=functools.partial(_first, first))
    ended = time.perf_counter()
    startup = max(0.0, (first[0] if first else ended) - started - CALLS * LATENCY)
    passed = sum(t.passed for t in store.trials(name))
    shown = f"{executor}, walled" if walled else executor
    return Point(agent, shown, trials, passed, ended - started - startup, startup, concurrency)


def report(points: list[Point]) -> str:
    """Wall time against the ideal and against the bare agent, per agent and executor."""
    bare = {p.agent: p for p in points if p.executor == "bare"}
    rows = [
        [p.agent, p.executor, f"{p.passed}/{p.trials}", secs(p.wall_s), secs(p.ideal_s),
         f"{p.efficiency:.0%}", secs(p.overhead_s), secs(p.startup_s),
         f"{p.wall_s / bare[p.agent].wall_s:.2f}x"
         if p.agent in bare and p.trials == bare[p.agent].trials else "n/a"]
        for p in points
    ]  # fmt: skip
    head = (
        f"{points[0].trials:,} trials x {CALLS} LLM calls of {LATENCY * 1000:.0f} ms, "
        f"{CONCURRENCY} in flight over {WORKERS} workers (bare: the agent alone, no harness; "
        f"walled: fewer trials, {WALLED_CONCURRENCY} then {CONCURRENCY} in flight over "
        f"{WORKERS // 2}; --quick: 4)"
    )
    return table(head, ["agent", "executor", "passed", "wall", "ideal", "efficiency",
                        "overhead/trial", "start-up", "vs bare"], rows)  # fmt: skip


def checked(points: list[Point]) -> Point:
    """The run the target is about: the first agent on the local executor."""
    return next(p for p in points if p.agent == AGENTS[0] and p.executor == "local")


def local_ok(points: list[Point]) -> bool:
    """Local at ``EFFICIENCY_TARGET`` of the ideal or better, every trial passed."""
    local = checked(points)
    return local.passed == local.trials and local.efficiency >= EFFICIENCY_TARGET


def main() -> None:
    """Run this benchmark alone."""
    parser = argparse.ArgumentParser(prog="python -m bench.executors", description=__doc__)
    parser.add_argument("--quick", action="store_true", help=f"{QUICK_TRIALS} trials")
    args = parser.parse_args()
    points = run(quick=args.quick)
    print(report(points))
    print(f"local at {EFFICIENCY_TARGET:.0%} of the ideal: {'yes' if local_ok(points) else 'NO'}")


if __name__ == "__main__":
    main()
