"""``replay run --agent-cmd``: a program that fails, or runs too long, is its trial's error.

One line says what happened (its exit code and last words, or the deadline of
``--trial-timeout``), the trial is an ``error`` of the agent's (or, past a
limit, of cause ``limit`` with the limit as its guard flag), the program and
its children are stopped, and the run goes on to its other trials.
"""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path

from replay import Store
from tests.helpers import HANG_GUARD_S, REPO, replay

CASE = str(REPO / "examples" / "frameworks" / "cases" / "reserve.yaml")
TOOLS = [
    "--tools",
    "examples.frameworks:make_tools",
    "--llm-url",
    "http://127.0.0.1:9/v1",
    "--no-llm-check",
]


def _trials(store: str, run: str) -> list[tuple[str, str, str]]:
    return [(t.verdict, t.cause, str(list(t.cause_detail))) for t in Store(store).trials(run)]


def _guards(store: str, run: str) -> list[list[str]]:
    return [list(t.guards) for t in Store(store).trials(run)]


def test_a_failing_agent_command_is_an_agent_error_in_one_line(tmp_path: Path) -> None:
    store = str(tmp_path / "results.db")
    code, _, err = replay(
        "run", CASE, "--run", "bad", "--store", store, *TOOLS,
        "--agent-cmd", "sh -c 'echo no key >&2; exit 3'",
    )  # fmt: skip
    assert code == 1, err  # the agent's error
    ((verdict, cause, detail),) = _trials(store, "bad")
    assert (verdict, cause) == ("error", "agent")
    assert "exited with code 3: no key" in detail and "\n" not in detail.strip("[]'\"")


def test_a_program_past_its_deadline_is_stopped_with_its_children(tmp_path: Path) -> None:
    store = str(tmp_path / "results.db")
    nap = f"sleep 431.{os.getpid()}"  # (its own: another run on this machine has its sleeps)
    started = time.monotonic()
    code, _, err = replay(
        "run", CASE, "--run", "slow", "--store", store, *TOOLS, "-k", "2",
        "--agent-cmd", f"sh -c '{nap}; echo late'", "--trial-timeout", "1",
    )  # fmt: skip
    assert code == 1, err  # its deadline: a limit
    assert time.monotonic() - started < HANG_GUARD_S  # cut at 1 s each, not 431 s
    trials = _trials(store, "slow")
    assert [(v, c) for v, c, _ in trials] == [("error", "limit")] * 2
    assert _guards(store, "slow") == [["timeout"], ["timeout"]]
    assert all("deadline of 1 s (--trial-timeout)" in d for _, _, d in trials)
    code, out, _ = replay("report", "slow", "--store", store)
    assert code == 0 and "limits hit (error trials, cause limit): timeout 2" in out
    assert f"2 x limit: the agent command `sh -c '{nap}; echo late'` did not" in out
    left = subprocess.run(["pgrep", "-f", nap], capture_output=True, text=True).stdout
    assert not left.strip()  # the program's own child was stopped too


def test_a_program_over_its_memory_is_stopped_walled_in_or_not(tmp_path: Path) -> None:
    from replay.agents import unavailable

    store = str(tmp_path / "results.db")
    hog = f"{sys.executable} -c 'import time; x = b\"x\" * (400 * 2**20); time.sleep(60)'"
    ways = ["none"] if unavailable() else ["none", "process"]
    for way in ways:
        code, _, err = replay(
            "run", CASE, "--run", way, "--store", store, *TOOLS, "--agent-cmd", hog,
            "--trial-memory", "100", "--isolation", way,
        )  # fmt: skip
        assert code == 1, err
        ((verdict, cause, detail),) = _trials(store, way)
        assert (verdict, cause) == ("error", "limit"), detail
        assert _guards(store, way) == [["memory"]]
        assert "more than its 100 MB (--trial-memory)" in detail, detail


def test_a_background_child_holding_stdout_does_not_hold_the_trial(tmp_path: Path) -> None:
    """``sh -c 'sleep 432 & echo done'``: the answer is the program's; its child goes with it."""
    store = str(tmp_path / "results.db")
    nap = f"sleep 432.{os.getpid()}"  # (its own: another run on this machine has its sleeps)
    started = time.monotonic()
    code, _, err = replay(
        "run", CASE, "--run", "bg", "--store", store, *TOOLS,
        "--agent-cmd", f"sh -c '{nap} & printf \"caf\\351 reserved\"'",
    )  # fmt: skip
    assert code == 1, err  # it answered without calling a tool: the case fails
    assert time.monotonic() - started < HANG_GUARD_S  # not held for the child's 432 s
    (trial,) = Store(store).trials("bg")
    assert trial.cause is None, trial.cause_detail  # graded, not an error of the agent
    left = subprocess.run(["pgrep", "-f", f"^{nap}"], capture_output=True, text=True).stdout
    assert not left.strip()


def test_a_failed_program_s_stderr_is_kept_with_its_error_secrets_scrubbed(
    tmp_path: Path,
) -> None:
    program = tmp_path / "noisy.py"
    program.write_text(
        "import json, os, sys\n"
        "for i in range(300): print(f'noise {i}', file=sys.stderr)\n"
        "key = json.loads(os.environ['REPLAY_SETTINGS'])['api_key']\n"
        "print(f'Error: the key {key} was refused', file=sys.stderr)\n"
        "sys.exit(1)\n"
    )
    store = str(tmp_path / "results.db")
    for isolation in ("process", "none"):
        code, _, err = replay(
            "run", CASE, "--run", isolation, "--store", store, *TOOLS, "--isolation", isolation,
            "--agent-cmd", f"{sys.executable} {program}", "--set", "api_key=sk-noisy-secret-42",
        )  # fmt: skip
        assert code == 1, err
        (trial,) = Store(store).trials(isolation)
        code, shown, _ = replay("show", str(trial.cassette))
        assert code == 0
        assert "noise 299" in shown  # its end, where the cause is
        assert "Error: the key" in shown and "was refused" in shown
        assert "sk-noisy-secret-42" not in shown
        code, dumped, _ = replay("show", "--json", str(trial.cassette))
        assert "the program's stderr (its last" in dumped and "noise 0\\n" in dumped  # all of it
        assert "sk-noisy-secret-42" not in dumped
