"""A walled run's third-party MCP servers are walled too, and their messages are bounded.

A hostile server (``hostile_mcp_server.py``) started by ``--mcp-server`` in a
``--isolation process`` run tries to read its parent's environment (where the
harness's secrets would be), the results store and ``/etc/shadow``: it reads
nothing. Then it answers with one 300 MB line: the harness refuses it past 16
MB without holding it (its peak memory no more than 256 MB over the same run
without the flood), and the trial ends as a ``server`` error naming it.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import threading
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest

from recorder import read_cassette
from replay import Store
from replay.agents import unavailable

pytest.importorskip("mcp", reason="the mcp extra is not installed")
pytestmark = [
    pytest.mark.skipif(
        unavailable() is not None, reason=f"isolation is unavailable here: {unavailable()}"
    ),
    pytest.mark.slow,
]
SERVER = Path(__file__).with_name("hostile_mcp_server.py")
REPLAY = Path(sys.executable).with_name("replay")
PLANTED = "sk-planted-harness-secret-0042"
HANG_GUARD_S = 600


def _run(tmp_path: Path, name: str, steps: list[object], *more: str) -> tuple[int, str, int]:
    """``replay run`` of one case in a process of its own: exit code, stderr, peak RSS (KiB)."""
    case = tmp_path / f"{name}.yaml"
    (tmp_path / "empty.sql").write_text("CREATE TABLE t (id INTEGER PRIMARY KEY);\n")
    case.write_text(
        f"id: {name}\ninstruction: {json.dumps(json.dumps(steps))}\nfixture: empty.sql\n"
    )
    store = str(tmp_path / ".replay" / "results.db")
    command = [
        str(REPLAY), "run", str(case), "--run", name, "--store", store,
        "--agent", "tests.replay.mcp_agents:scripted",
        "--tools", "tests.replay.mcp_agents:no_tools", "--isolation", "process",
        "--mcp-server", f"test={sys.executable} {SERVER}",
        "--llm-url", "http://127.0.0.1:9/v1", "--no-llm-check",
        *more,
    ]  # fmt: skip
    err = tmp_path / f"{name}.err"
    with open(err, "w") as said:
        process = subprocess.Popen(
            command, stderr=said, env={**os.environ, "OPENAI_API_KEY": PLANTED}
        )
    guard = threading.Timer(HANG_GUARD_S, os.kill, (process.pid, signal.SIGKILL))
    guard.start()
    try:
        _, status, usage = os.wait4(process.pid, 0)
    finally:
        guard.cancel()
    process.returncode = os.waitstatus_to_exitcode(status)
    return process.returncode, err.read_text(), usage.ru_maxrss


def test_a_hostile_server_reads_nothing_and_its_flood_is_refused_unheld(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(Path(__file__).parents[2])  # (the agent's code: this project's tests)
    store = tmp_path / ".replay" / "results.db"
    store.parent.mkdir()
    peek = ["call", "peek", {"paths": [str(store), "/etc/shadow", "/proc/self/status"]}]
    with ThreadPoolExecutor(2) as both:  # (at once: each process's peak is its own)
        calm_run = both.submit(_run, tmp_path, "peek", [peek])
        flood_run = both.submit(_run, tmp_path, "flood", [peek, ["call", "flood", {}]])
        (code, err, calm), (flood_code, flood_err, flooded) = calm_run.result(), flood_run.result()
    assert code == 0, err
    assert flood_code == 3, flood_err  # (a server's failure: the trial could not be judged)
    assert flooded - calm <= 256 * 1024, (calm, flooded)
    trials = {name: Store(str(store)).trials(name)[0] for name in ("peek", "flood")}
    flood = trials["flood"]
    assert (flood.verdict, flood.cause) == ("error", "server"), flood
    assert "over 16,777,216 bytes" in " ".join(flood.cause_detail)
    for trial in trials.values():
        answer = read_cassette(trial.cassette).footer.final_answer or ""
        peeked = json.loads(answer.splitlines()[0].removeprefix("peek: "))
        assert all(got.startswith("failed") or PLANTED not in got for got in peeked.values())
        assert PLANTED not in answer
        assert [
            got for path, got in peeked.items() if not path.endswith(("environ", "status"))
        ] == ["failed: FileNotFoundError"] * 2
        status = dict(
            line.split(":\t", 1)
            for line in peeked["/proc/self/status"].splitlines()
            if ":\t" in line
        )  # the server's own: not root, no capability, no privilege to gain, filtered
        assert status["Uid"].split()[0] != "0" and status["CapEff"] == "0000000000000000"
        assert status["NoNewPrivs"] == "1" and status["Seccomp"] == "2"


def test_a_server_past_the_trial_s_memory_is_stopped_as_failed(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(Path(__file__).parents[2])
    hog = [["call", "hog", {"mb": 600}]]
    code, err, _ = _run(tmp_path, "hog", hog, "--trial-memory", "256")
    assert code == 3, err  # the server's failure: the trial could not be judged
    (trial,) = Store(str(tmp_path / ".replay" / "results.db")).trials("hog")
    assert (trial.verdict, trial.cause) == ("error", "server"), trial
    (detail,) = trial.cause_detail
    assert "MCP server 'test' held" in detail and "more than its 256 MB (--trial-memory)" in detail
