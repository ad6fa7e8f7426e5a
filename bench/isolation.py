"""A trial's start-up cost behind walls: the same trial in-process, as a plain child, walled.

Each way runs the same sandbox trial whose agent answers at once (in-process:
a function; otherwise the program ``echo``), so what differs is what it takes
to start the agent: for a program, its environment (the trial's LLM proxy and
MCP endpoints) and the process; walled in (``--isolation process``), bubblewrap's
namespaces, the forwarder inside, the bridges outside and the seccomp filter's
supervisor; a walled Python agent (the same function, ``--agent`` with
``--isolation process``) is forked from a zygote that imported it once (its
first trial, which starts the zygote, is one of the many the median leaves
out). The median of interleaved trials counts.

Then the cost of each LLM call behind the walls: the benchmark's ``httpx_agent``
(10 calls, one tool call) on an LLM that answers at once, in-process and walled
(where each call goes through the forwarder, the bridge and the trial's recording
LLM proxy); per call = (its trial - the start-up trial of the same way) / 10.

Run alone: ``python -m bench.isolation [--quick]``.
"""

from __future__ import annotations

import argparse
import statistics
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ._report import ms, table
from ._trial_agent import CALLS

TARGET_MS = 50.0
"""The target: a walled trial starts within 50 ms of an in-process one."""
WAYS = ("in-process", "plain child", "walled", "walled Python agent")


@dataclass(frozen=True)
class Result:
    """Median seconds per trial, each way; and per LLM call, in-process and walled."""

    seconds: dict[str, float]
    per_call: dict[str, float]

    @property
    def added(self) -> float:
        """Seconds the walls add to a trial over the in-process one (the worse of the two)."""
        walled = max(self.seconds["walled"], self.seconds["walled Python agent"])
        return walled - self.seconds["in-process"]

    @property
    def ok(self) -> bool:
        """Under the target."""
        return self.added * 1000 < TARGET_MS


def available() -> bool:
    """Whether bubblewrap runs here."""
    from replay.agents import unavailable

    return unavailable() is None


def _answer(instruction: str, env: Any) -> str:
    return "done"


def run(quick: bool = False, smoke: bool = False) -> Result:
    """Each way, interleaved, 30 times (``quick``: 8; ``smoke``: 3, that it runs)."""
    from replay import AgentCommand, load_case, sandbox
    from replay.agents._command import ChildAgent

    agents: dict[str, Any] = {
        "in-process": _answer,
        "plain child": AgentCommand(("echo", "done")),
        "walled": AgentCommand(("echo", "done"), isolation="process"),
        "walled Python agent": ChildAgent("bench.isolation:_answer"),  # forked from a zygote
    }
    times: dict[str, list[float]] = {way: [] for way in WAYS}
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        (root / "w.sql").write_text("CREATE TABLE t (id INTEGER PRIMARY KEY);\n")
        (root / "case.yaml").write_text("id: start\ninstruction: go\nfixture: w.sql\n")
        case = load_case(root / "case.yaml")
        rounds = 3 if smoke else 8 if quick else 30
        for i in range(rounds):
            for way in WAYS:
                started = time.perf_counter()
                sandbox(case, agents[way], lambda conn: [], root / f"{i}.cassette",
                        llm_base_url="http://127.0.0.1:9/v1")  # fmt: skip
                times[way].append(time.perf_counter() - started)
        per_call = _per_call(root, rounds)
    seconds = {way: statistics.median(times[way]) for way in WAYS}
    start = {"in-process": seconds["in-process"], "walled": seconds["walled Python agent"]}
    return Result(seconds, {way: max(0.0, t - start[way]) / CALLS for way, t in per_call.items()})


def _per_call(root: Path, trials: int) -> dict[str, float]:
    """Median seconds of a trial of ``httpx_agent`` (``CALLS`` LLM calls), each way."""
    from replay import load_case, sandbox
    from replay.agents._command import ChildAgent

    from . import _slow_llm
    from ._trial_agent import httpx_agent, tools

    (root / "calls.yaml").write_text("id: calls\ninstruction: go\nfixture: calls.sql\n")
    (root / "calls.sql").write_text("CREATE TABLE notes (id INTEGER PRIMARY KEY, text TEXT);\n")
    case = load_case(root / "calls.yaml")
    agents = {"in-process": httpx_agent, "walled": ChildAgent("bench._trial_agent:httpx_agent")}
    times: dict[str, list[float]] = {way: [] for way in agents}
    server, url = _slow_llm.start(0.0)
    try:
        for i in range(trials):
            for way, agent in agents.items():
                started = time.perf_counter()
                sandbox(case, agent, tools, root / f"calls-{i}.cassette", llm_base_url=url)
                times[way].append(time.perf_counter() - started)
    finally:
        server.kill()
    return {way: statistics.median(t) for way, t in times.items()}


def report(result: Result) -> str:
    """The table."""
    base = result.seconds["in-process"]
    rows = [[way, ms(s), ms(s - base)] for way, s in result.seconds.items()]
    calls = [
        [way, ms(s), ms(s - result.per_call["in-process"])] for way, s in result.per_call.items()
    ]
    return "\n".join([
        table(
            "Trial start-up: a sandbox trial whose agent answers at once",
            ["agent", "per trial", "over in-process"],
            rows,
        ),
        table(
            f"Each LLM call ({CALLS} a trial, httpx, an LLM that answers at once)",
            ["agent", "per call", "over in-process"],
            calls,
        ),
    ])  # fmt: skip


def main() -> None:
    """Run and print."""
    parser = argparse.ArgumentParser(prog="python -m bench.isolation", description=__doc__)
    parser.add_argument("--quick", action="store_true")
    quick = parser.parse_args().quick
    if not available():
        print("isolation: skipped (bubblewrap does not run here)")
        return
    print(report(run(quick=quick)))


if __name__ == "__main__":
    main()
