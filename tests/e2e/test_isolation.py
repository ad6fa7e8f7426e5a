"""``--isolation process``: an agent program walled in, each way out tried and blocked.

The program (``escape_child.py``) tries a canary server on the harness's own
loopback (IPv4 and IPv6), another host, DNS, writing the results store and the
fixture, and reading a secret planted in the harness's environment (directly
and through ``/proc``). Walled in, all fail and the canary sees no connection;
as a plain child (``--isolation none``) it reaches the canary, so the test
shows the walls are what blocks it; a Python agent walled in (``--agent``
with ``--isolation process``: ``replay.modes._child``) is blocked alike. Real
agents (Node with the official SDKs; openai-agents) still reach their LLM and
tools through the walls, and are replayed offline.
"""

from __future__ import annotations

import json
import os
import shutil
import socket
import sys
import tempfile
import threading
from pathlib import Path
from typing import Any

import pytest

from replay import AgentCommand, load_case, sandbox
from replay.channels._isolation import unavailable
from replay.modes import NO_LLM_URL
from replay.modes._command import ChildAgent
from tests.e2e.escape_child import escape

pytestmark = pytest.mark.skipif(
    unavailable() is not None, reason=f"isolation is unavailable here: {unavailable()}"
)
CHILD = [sys.executable, str(Path(__file__).with_name("escape_child.py"))]
SECRET, VALUE = "STRIPE_SK", "sk_live_planted_4242"


class Canary:
    """A server on the harness's loopback that counts who reached it."""

    def __init__(self, family: socket.AddressFamily, host: str) -> None:
        self.reached = 0
        self._sock = socket.socket(family)
        self._sock.bind((host, 0))
        self._sock.listen(8)
        self.port = self._sock.getsockname()[1]
        threading.Thread(target=self._serve, daemon=True).start()

    def _serve(self) -> None:
        while True:
            try:
                conn, _ = self._sock.accept()
            except OSError:
                return
            self.reached += 1
            conn.close()

    def close(self) -> None:
        self._sock.close()


def _escape(
    tmp_path: Path,
    isolation: str,
    monkeypatch: pytest.MonkeyPatch,
    python: bool = False,
    in_process: bool = False,
) -> tuple[Any, ...]:
    monkeypatch.setenv(SECRET, VALUE)
    (tmp_path / "w.sql").write_text("CREATE TABLE t (id INTEGER PRIMARY KEY);\n")
    (tmp_path / "case.yaml").write_text("id: escape\ninstruction: get out\nfixture: w.sql\n")
    store = tmp_path / "results.db"
    store.write_bytes(b"")
    canary, canary6 = Canary(socket.AF_INET, "127.0.0.1"), Canary(socket.AF_INET6, "::1")
    (tmp_path / "planted.txt").write_text("another trial's")
    host = tempfile.mkdtemp(dir="/var/tmp" if Path("/var/tmp").is_dir() else None)
    listener = socket.socket(socket.AF_UNIX)
    listener.bind(os.path.join(host, "s"))
    listener.listen(1)
    settings = {
        "canary": canary.port, "canary6": canary6.port, "store": str(store),
        "fixture": str(tmp_path / "w.sql"), "secret": SECRET, "value": VALUE[::-1],
        "planted": str(tmp_path / "planted.txt"), "socket": os.path.join(host, "s"),
    }  # fmt: skip
    try:
        agent: Any = AgentCommand(tuple(CHILD), isolation=isolation)  # type: ignore[arg-type]
        if python:
            agent = escape if in_process else ChildAgent("tests.e2e.escape_child:escape")
        trial = sandbox(
            load_case(tmp_path / "case.yaml"), agent, lambda conn: [], tmp_path / "t.cassette",
            llm_base_url=NO_LLM_URL, settings=settings,
        )  # fmt: skip
    finally:
        canary.close()
        canary6.close()
        listener.close()
        shutil.rmtree(host, ignore_errors=True)
    assert trial.trial.answer, trial.outcome.evidence
    return json.loads(trial.trial.answer), canary.reached + canary6.reached


@pytest.mark.parametrize("python", [False, True], ids=["program", "python-agent"])
def test_walled_in_every_way_out_is_blocked(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, python: bool
) -> None:
    if not python:
        monkeypatch.chdir("/tmp")  # the working directory is no way into /tmp either
    found, reached = _escape(tmp_path, "process", monkeypatch, python)
    blocked = [
        "canary over 127.0.0.1", "canary over ::1", "another host", "DNS",
        "HTTP through the LLM's host, another port", "write the store", "write the fixture",
        "secret in the environment", "secret in /proc/*/environ", "curl in a subprocess",
        "httpcore directly", "a plain thread", "UPDATE the results store",
        "the World through gc", "read another trial's file in /tmp",
        "a Unix socket of the host's", "remount / writable",
    ]  # fmt: skip
    if python:
        blocked.append("recorder.unrecorded()")
    assert {k: found[k].split(":")[0] for k in blocked} == dict.fromkeys(blocked, "blocked")
    assert found["write a private temp file"] == "reached"
    assert int(found["processes seen"]) <= 4  # its own: not the harness's
    assert reached == 0


def test_an_agent_in_the_harness_s_process_reaches_what_the_walls_keep_out(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The same Python agent unwalled (``--isolation none``): the vectors the walls close."""
    found, _ = _escape(tmp_path, "none", monkeypatch, python=True, in_process=True)
    for vector in ("the World through gc", "UPDATE the results store", "write the fixture"):
        assert found[vector] == "reached", vector


def test_a_plain_child_reaches_what_the_walls_keep_out(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    found, reached = _escape(tmp_path, "none", monkeypatch)
    assert found["canary over 127.0.0.1"] == "reached" and reached >= 1
    assert found["write the store"] == "reached"
    assert found["secret in the environment"] == "blocked"  # the environment is built, even so


def test_a_framework_agent_walled_in_is_recorded_graded_and_replayed(tmp_path: Path) -> None:
    """openai-agents (its tools from env.functions) in its own process, then offline."""
    pytest.importorskip("agents", reason="the frameworks extra is not installed")
    from replay import Store
    from replay.stub_llm import ScriptedPolicy, StubLLM
    from tests.helpers import REPO, replay

    store = str(tmp_path / "results.db")
    run = [
        str(REPO / "examples/frameworks/cases/reserve.yaml"), "--store", store,
        "--agent", "examples.frameworks.openai_agents_chat:agent", "--isolation", "process",
        "--tools", "examples.frameworks:make_tools",
    ]  # fmt: skip
    policy = ScriptedPolicy.from_json(REPO / "examples" / "frameworks" / "script.json")
    with StubLLM(policy) as llm:
        code, _, err = replay("run", *run, "--run", "walled", "--llm-url", llm.openai_base_url)
    assert code == 0, err
    cassettes = str(tmp_path / "cassettes" / "walled")
    code, _, err = replay(
        "run", *run, "--run", "again", "--mode", "offline", "--cassettes", cassettes
    )
    assert code == 0, err
    for name in ("walled", "again"):
        assert [t["verdict"] for t in Store(store).trials(name)] == ["pass"], name


def test_a_node_agent_reaches_its_llm_and_tools_through_the_walls(tmp_path: Path) -> None:
    from tests.helpers import REPO, replay

    node = REPO / "examples" / "node"
    if not (node / "node_modules").is_dir():
        pytest.skip("examples/node's packages are not installed (make test runs npm ci there)")
    from replay import Store
    from replay.stub_llm import ScriptedPolicy, StubLLM

    store = str(tmp_path / "results.db")
    policy = ScriptedPolicy.from_json(REPO / "examples" / "frameworks" / "script.json")
    with StubLLM(policy) as llm:
        code, _, err = replay(
            "run", str(REPO / "examples/frameworks/cases/reserve.yaml"), "--run", "walled",
            "--store", store, "--agent-cmd", f"node {node / 'agent.mjs'}",
            "--isolation", "process", "--tools", "examples.frameworks:make_tools",
            "--llm-url", llm.openai_base_url,
        )  # fmt: skip
    assert code == 0, err
    assert [t["verdict"] for t in Store(store).trials("walled")] == ["pass"]
