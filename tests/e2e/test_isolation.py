"""``--isolation process``: an agent program walled in, each way out tried and blocked.

The program (``escape_child.py``) tries a canary server on the harness's own
loopback (IPv4 and IPv6), another host, DNS, writing the results store and the
fixture, and reading eight secrets planted in the harness's environment (directly
and through ``/proc``). Walled in, all fail and the canary sees no connection;
as a plain child (``--isolation none``) it reaches the canary, so the test
shows the walls are what blocks it; a Python agent walled in (``--agent``
with ``--isolation process``: ``replay.agents._child``) is blocked alike. Real
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

from recorder import ViolationEvent
from replay import AgentCommand, load_case, sandbox
from replay.agents import unavailable
from replay.agents._command import ChildAgent
from replay.graders import Verdict
from replay.modes import NO_LLM_URL
from tests.e2e.escape_child import escape
from tests.helpers import REPO, decompressed, replay

pytestmark = pytest.mark.skipif(
    unavailable() is not None, reason=f"isolation is unavailable here: {unavailable()}"
)
CHILD = [sys.executable, str(Path(__file__).with_name("escape_child.py"))]
SECRETS = {
    "OPENAI_API_KEY": "sk-proj-planted-0001", "ANTHROPIC_API_KEY": "sk-ant-planted-0002",
    "AWS_SECRET_ACCESS_KEY": "aws-planted-0003", "GITHUB_TOKEN": "ghp_planted0004",
    "DATABASE_URL": "postgres://app:pw-planted-0005@db.internal/app",
    "STRIPE_SK": "sk_live_planted_0006", "MYSQL_PWD": "mysql-planted-0007",
    "SENTRY_DSN": "https://planted0008@o1.ingest.sentry.io/1",
}  # fmt: skip
"""Planted in the harness's environment: the four its name filter hides, four it does not."""


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
    for name, value in SECRETS.items():
        monkeypatch.setenv(name, value)
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
        "fixture": str(tmp_path / "w.sql"), "values": [v[::-1] for v in SECRETS.values()],
        "planted": str(tmp_path / "planted.txt"), "socket": os.path.join(host, "s"),
        "abstract": f"replay-test-{os.getpid()}", "ptrace": not in_process,
        "code": str(Path(__file__).with_name("escape_child.py")),
    }  # fmt: skip
    abstract = socket.socket(socket.AF_UNIX)  # the harness's, on its own network
    abstract.bind("\0" + settings["abstract"])
    abstract.listen(1)
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
        abstract.close()
        shutil.rmtree(host, ignore_errors=True)
    assert trial.trial.answer, trial.outcome.evidence
    Seen.trial, Seen.settings = trial, settings
    return json.loads(trial.trial.answer), canary.reached + canary6.reached


class Seen:
    """The last trial ``_escape`` ran, and what it was given."""

    trial: Any = None
    settings: dict[str, Any] = {}  # noqa: RUF012


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
        "the World through gc", "read another trial's temporary file",
        "a Unix socket of the host's", "remount / writable", "an abstract Unix socket",
        "ptrace of the parent", "a capability left", "write the code",
    ]  # fmt: skip
    if python:
        blocked.append("recorder.unrecorded()")
    assert {k: found[k].split(":")[0] for k in blocked} == dict.fromkeys(blocked, "blocked")
    assert found["write a private temp file"] == "reached"
    assert int(found["processes seen"]) <= 4  # its own: not the harness's
    assert reached == 0
    # Each reach for the network, another process or a socket was seen as it was made,
    # refused, and recorded: the trial fails on them, whatever the agent answered.
    trial, given = Seen.trial, Seen.settings
    events = trial.trial.cassette.events
    seen = {f"{e.action} {e.target}" for e in events if isinstance(e, ViolationEvent)}
    expected = {
        f"connect 127.0.0.1:{given['canary']}", f"connect [::1]:{given['canary6']}",
        "connect 10.255.255.1:80", "dns example.com", f"connect unix:{given['socket']}",
        f"connect unix:@{given['abstract']}", f"write {given['code']}",
    }  # fmt: skip
    # The store and the fixture are not in its filesystem at all: writing them is still tried.
    expected |= {f"write {given[k]}" for k in ("store", "fixture")}
    assert expected <= seen, seen
    assert any(s.startswith("ptrace pid ") for s in seen), seen
    assert trial.outcome.verdict is Verdict.FAIL
    written = decompressed(trial.trial.cassette.path)  # nor in what the trial wrote
    assert not [v for v in SECRETS.values() if v.encode() in written]
    (veto,) = [g for g in trial.outcome.grades if g.grader == "sandbox"]
    assert veto.veto and any("10.255.255.1:80" in d for d in veto.evidence)


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
    if os.geteuid() == 0:  # (as root, as in CI: the harness's own process is reachable)
        assert found["ptrace of the parent"] == "reached"
        assert found["a capability left"] == "reached"
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
        assert [t.verdict for t in Store(store).trials(name)] == ["pass"], name


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
    assert [t.verdict for t in Store(store).trials("walled")] == ["pass"]


_DIAL = """
import json, os, socket
found = {}
for target in json.loads(os.environ["REPLAY_SETTINGS"])["targets"]:
    host, port = target.rsplit(":", 1)
    try:
        with socket.create_connection((host, int(port)), timeout=5) as conn:
            found[target] = conn.recv(16).decode()
    except OSError as exc:
        found[target] = f"blocked: {type(exc).__name__}"
print(json.dumps(found))
"""


def test_an_allowed_host_is_reached_by_its_name_and_nothing_else_is(tmp_path: Path) -> None:
    """``--allow-host``: the name resolves inside to an address bridged to the real host."""
    name = socket.gethostname()
    try:
        socket.getaddrinfo(name, 80)
    except OSError:
        pytest.skip(f"this machine's own name {name!r} does not resolve here")
    server = socket.socket()
    server.bind(("0.0.0.0", 0))  # (reached by the machine's name)
    server.listen(8)
    port = server.getsockname()[1]

    def serve() -> None:
        while True:
            try:
                conn, _ = server.accept()
            except OSError:
                return
            conn.sendall(b"hello")
            conn.close()

    threading.Thread(target=serve, daemon=True).start()
    (tmp_path / "w.sql").write_text("CREATE TABLE t (id INTEGER PRIMARY KEY);\n")
    (tmp_path / "case.yaml").write_text("id: dial\ninstruction: dial\nfixture: w.sql\n")
    targets = [f"{name}:{port}", f"127.0.0.1:{port}", f"{name}:{port + 1 if port < 65535 else 1}"]
    agent = AgentCommand(
        (sys.executable, "-c", _DIAL), isolation="process", allow_hosts=((name.lower(), port),)
    )
    try:
        trial = sandbox(
            load_case(tmp_path / "case.yaml"), agent, lambda conn: [], tmp_path / "t.cassette",
            llm_base_url=NO_LLM_URL, settings={"targets": targets},
        )  # fmt: skip
    finally:
        server.close()
    found = json.loads(trial.trial.answer or "{}")
    assert found[targets[0]] == "hello", found  # allowed: through the walls to the real host
    assert found[targets[1]].startswith("blocked"), found  # the same port, not by its name
    assert found[targets[2]].startswith("blocked"), found  # the name, another port
    events = trial.trial.cassette.events
    seen = {f"{e.action} {e.target}" for e in events if isinstance(e, ViolationEvent)}
    assert f"connect 127.0.0.1:{port}" in seen, seen
    assert not any(name.lower() in s for s in seen if s.startswith("dns")), seen
    assert trial.outcome.verdict is Verdict.FAIL  # for the two it was not allowed


def test_allow_host_refuses_what_it_cannot_allow(tmp_path: Path) -> None:
    from recorder import ConfigError
    from replay.agents import allowed_host

    assert allowed_host("api.internal") == ("api.internal", 443)
    assert allowed_host("LOCALHOST:8080") == ("127.0.0.1", 8080)
    assert allowed_host("[::1]:5432") == ("127.0.0.1", 5432)
    for bad in ("10.0.0.5:5432", "http://x/", "host:0", ""):
        with pytest.raises(ConfigError, match=r"`agent\.allow_hosts`"):  # the setting
            allowed_host(bad)
    code, _, err = replay(  # and the option that fills it, on the command line
        "run", str(REPO / "examples" / "shop" / "cases" / "refund-4812.yaml"), "--run", "r",
        "--store", str(tmp_path / "r.db"),
        "--agent", "examples.shop:agent", "--allow-host", "10.0.0.5:5432",
    )  # fmt: skip
    assert code == 2
    assert err.startswith("error: --allow-host '10.0.0.5:5432': inside the walls another machine")
