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

Then what the walls add to each step of an agent, timed inside it: the benchmark's
``timed_agent`` (a new ``httpx.Client``, 10 LLM calls, one tool call, on an LLM that
answers at once) in-process and walled, where each call goes through the forwarder,
the bridge and the trial's recording LLM proxy, and the tool call through the trial's
tool channel. The medians over every trial's calls count.

Run alone: ``python -m bench.isolation [--quick]``.
"""

from __future__ import annotations

import argparse
import json
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


STEPS = ("LLM call", "tool call", "new httpx.Client")
"""The agent's steps timed inside it (``_trial_agent.timed_agent``)."""


@dataclass(frozen=True)
class Result:
    """Median seconds per trial, each way; and each step of an agent, in-process and walled."""

    seconds: dict[str, float]
    steps: dict[str, dict[str, float]]
    """Median milliseconds of each of ``STEPS``, by way (``in-process``, ``walled``)."""

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
        steps = _steps(root, rounds)
    return Result({way: statistics.median(times[way]) for way in WAYS}, steps)


def _steps(root: Path, trials: int) -> dict[str, dict[str, float]]:
    """Median milliseconds of each of ``STEPS`` inside ``timed_agent``'s trials, each way."""
    from recorder import read_cassette
    from replay import load_case, sandbox
    from replay.agents._command import ChildAgent

    from . import _slow_llm
    from ._trial_agent import timed_agent, tools

    (root / "calls.yaml").write_text("id: calls\ninstruction: go\nfixture: calls.sql\n")
    (root / "calls.sql").write_text("CREATE TABLE notes (id INTEGER PRIMARY KEY, text TEXT);\n")
    case = load_case(root / "calls.yaml")
    agents = {"in-process": timed_agent, "walled": ChildAgent("bench._trial_agent:timed_agent")}
    taken: dict[str, dict[str, list[float]]] = {way: {s: [] for s in STEPS} for way in agents}
    server, url = _slow_llm.start(0.0)
    try:
        for i in range(trials):
            for way, agent in agents.items():
                path = root / f"calls-{way}-{i}.cassette"
                sandbox(case, agent, tools, path, llm_base_url=url)
                footer = read_cassette(path).summary()
                if footer.status != "ok" or footer.final_answer is None:
                    raise RuntimeError(f"the {way} timed trial ended {footer.status}")
                answer = json.loads(footer.final_answer)
                taken[way]["LLM call"] += answer["calls"]
                taken[way]["tool call"].append(answer["tool"])
                taken[way]["new httpx.Client"].append(answer["client"])
    finally:
        server.kill()
    return {way: {s: statistics.median(t) for s, t in by.items()} for way, by in taken.items()}


def report(result: Result) -> str:
    """The table."""
    base = result.seconds["in-process"]
    rows = [[way, ms(s), ms(s - base)] for way, s in result.seconds.items()]
    inside, walled = result.steps["in-process"], result.steps["walled"]
    steps = [[s, f"{inside[s]:.3f} ms", f"{walled[s]:.3f} ms", f"{walled[s] - inside[s]:.3f} ms"]
             for s in STEPS]  # fmt: skip
    return "\n".join([
        table(
            "Trial start-up: a sandbox trial whose agent answers at once",
            ["agent", "per trial", "over in-process"],
            rows,
        ),
        table(
            f"Inside the agent: each step's median (httpx, {CALLS} LLM calls a trial, an LLM "
            "that answers at once)",
            ["step", "in-process", "walled", "walls add"],
            steps,
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
