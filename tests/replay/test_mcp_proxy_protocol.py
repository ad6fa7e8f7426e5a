"""The recording proxy relays the protocol beyond tools, and a failing server fails its trial.

The server is built with the official SDK's FastMCP (``mcp_test_server.py``):
progress, a resource and a prompt are recorded and answered offline with the
server never started; a server that dies, garbles its stdout or hangs makes the
trial an ``error`` whose cause is the server, in one line naming it, and what
was recorded before stays.
"""

from __future__ import annotations

import json
import sys
import time
from pathlib import Path
from typing import Any

import pytest

from recorder import ToolEvent, read_cassette
from replay import McpServer, load_case, offline, sandbox
from replay.modes import NO_LLM_URL
from tests.helpers import HANG_GUARD_S
from tests.replay.mcp_agents import no_tools, scripted

pytest.importorskip("mcp", reason="the mcp SDK is not installed (pip install 'agent-replay[mcp]')")
SERVER = Path(__file__).with_name("mcp_test_server.py")


def _case(tmp_path: Path, steps: list[Any], name: str = "steps") -> Any:
    (tmp_path / "notes.sql").write_text(
        "CREATE TABLE notes (id INTEGER PRIMARY KEY, text TEXT NOT NULL);\n"
        "INSERT INTO notes (text) VALUES ('first');\n"
    )
    (tmp_path / f"{name}.yaml").write_text(
        f"id: {name}\ninstruction: '{json.dumps(steps)}'\nfixture: notes.sql\n"
        "allowed_tables: [notes]\nassert:\n  - no_side_effects\n"
    )
    return load_case(tmp_path / f"{name}.yaml")


def _servers(command: str | None = None, **kwargs: Any) -> dict[str, McpServer]:
    program = [command] if command else [sys.executable, str(SERVER)]
    return {"test": McpServer(command=[*program, "{world}"], **kwargs)}


def _live(case: Any, out: Path, via: str = "stdio", **kwargs: Any) -> Any:
    servers = kwargs.pop("mcp_servers", None) or _servers()
    return sandbox(
        case, scripted, no_tools, out, llm_base_url=NO_LLM_URL, mcp_servers=servers,
        settings={"via": via}, **kwargs,
    )  # fmt: skip


def _calls(path: Path) -> list[ToolEvent]:
    return [e for e in read_cassette(path).events if isinstance(e, ToolEvent)]


@pytest.mark.parametrize("via", ["stdio", "http"])
def test_progress_resources_and_prompts_are_recorded_and_answered_offline(
    tmp_path: Path, via: str
) -> None:
    steps = [
        ["call", "count", {"n": 3}],
        ["read", "notes://all"],
        ["prompt", "summarize", {"topic": "notes"}],
    ]
    case = _case(tmp_path, steps)
    live = _live(case, tmp_path / "live.cassette", via)
    assert live.outcome.verdict.value == "pass", live.outcome.evidence
    assert live.trial.answer.splitlines() == [
        "progress 1/3 step 1", "progress 2/3 step 2", "progress 3/3 step 3",
        "count: counted to 3",
        "notes://all: first",
        "summarize: Summarize what we know about notes.",
    ]  # fmt: skip
    calls = {e.name: e for e in _calls(tmp_path / "live.cassette")}
    assert {"mcp:test:initialize", "count", "mcp:test:resources/read", "mcp:test:prompts/get"} <= (
        calls.keys()
    )
    assert calls["mcp:test:resources/read"].args == {"uri": "notes://all"}
    assert [p["message"] for p in calls["count"].result["_meta"]["agent-replay/progress"]] == [
        "step 1", "step 2", "step 3",
    ]  # fmt: skip

    recorded = read_cassette(tmp_path / "live.cassette")
    nowhere = _servers(command=str(tmp_path / "no-such-server"))  # fails if it is ever started
    again = offline(
        case, scripted, no_tools, recorded, tmp_path / "o", mcp_servers=nowhere,
        settings={"via": via},
    )  # fmt: skip
    assert again.outcome.verdict.value == "pass", again.outcome.evidence
    assert again.trial.answer == live.trial.answer  # the progress too, in its order
    other = [*steps[:1], ["read", "notes://other"], *steps[2:]]
    changed = offline(
        case, scripted, no_tools, recorded, tmp_path / "c", mcp_servers=nowhere,
        settings={"via": via, "steps": other},
    )  # fmt: skip
    assert changed.outcome.verdict.value == "unsupported"
    assert "fixture unsupported: mcp:test:resources/read(uri='notes://other')" in (
        changed.trial.answer or ""
    )


@pytest.mark.parametrize(
    ("step", "said"),
    [
        (["call", "die", {}], "MCP server 'test' exited (code 3): dying on purpose"),
        (
            ["call", "garble", {}],
            "MCP server 'test' answered malformed JSON-RPC: 'this is not JSON-RPC'",
        ),
        (["call", "hang", {}], "MCP server 'test' did not answer tools/call within 1 s"),
    ],
    ids=["dies", "garbles", "hangs"],
)
def test_a_server_that_fails_mid_trial_is_the_trial_s_error_and_nothing_recorded_is_lost(
    tmp_path: Path, step: list[Any], said: str
) -> None:
    steps = [["call", "note", {"text": "kept"}], step, ["call", "note", {"text": "never"}]]
    case = _case(tmp_path, steps)
    started = time.monotonic()
    trial = _live(case, tmp_path / "t.cassette", mcp_servers=_servers(timeout=1))
    assert time.monotonic() - started < HANG_GUARD_S  # a hang is cut at the server's timeout
    assert trial.outcome.verdict.value == "error"
    assert trial.outcome.cause is not None and trial.outcome.cause.value == "server"
    assert trial.outcome.evidence[0] == f"server: {said}"
    lines = (trial.trial.answer or "").splitlines()
    assert lines[0] == "note: noted kept"
    assert said in lines[1] and said in lines[2]  # told the agent, then every later call
    calls = _calls(tmp_path / "t.cassette")
    note = next(e for e in calls if e.name == "note")
    assert note.delta is not None and [c.after for c in note.delta["notes"]] == [
        {"id": 2, "text": "kept"}
    ]  # what came before the failure is in the cassette, with its delta
    assert list(trial.trial.diff.table("notes").inserted.values()) == [{"id": 2, "text": "kept"}]

    recorded = read_cassette(tmp_path / "t.cassette")  # offline: the same failure, told the same
    nowhere = _servers(command=str(tmp_path / "no-such-server"))
    again = offline(case, scripted, no_tools, recorded, tmp_path / "o", mcp_servers=nowhere)
    assert (again.outcome.verdict.value, again.outcome.evidence[0]) == ("error", f"server: {said}")
    assert again.trial.answer == trial.trial.answer


def test_the_run_goes_on_past_a_trial_whose_server_dies(tmp_path: Path) -> None:
    """``replay run``: the dying server's trial is an error (the server's), its neighbour passes."""
    from replay import Store
    from tests.helpers import replay

    cases = [
        _case(tmp_path, [["call", "die", {}]], "dies"),
        _case(tmp_path, [["call", "count", {"n": 1}]], "counts"),
    ]
    store = str(tmp_path / "results.db")
    code, out, err = replay(
        "run", *(str(c.path) for c in cases), "--run", "r", "--store", store,
        "--agent", "tests.replay.mcp_agents:scripted",
        "--tools", "tests.replay.mcp_agents:no_tools", "--llm-url", NO_LLM_URL, "--no-llm-check",
        "--mcp-server", f"test={sys.executable} {SERVER} {{world}}",
    )  # fmt: skip
    assert code == 3, err  # the server's error, not the agent's
    trials = {t.case_id: t for t in Store(store).trials("r")}
    assert trials["counts"].verdict == "pass"
    assert (trials["dies"].verdict, trials["dies"].cause) == ("error", "server")
    assert "Traceback" not in out + err


def test_a_client_s_housekeeping_is_no_decision_of_the_agent(tmp_path: Path) -> None:
    """Listing tools every turn (as frameworks do) is recorded, and is neither a loop nor a call."""
    steps = [*(["list", f"turn {i}"] for i in range(4)), ["call", "count", {"n": 1}]]
    trial = _live(_case(tmp_path, steps), tmp_path / "l.cassette")
    names = [e.name for e in _calls(tmp_path / "l.cassette")]
    assert names.count("mcp:test:tools/list") == 4
    assert trial.outcome.verdict.value == "pass", trial.outcome.evidence  # the rule grader: no loop
    assert trial.tool_use.calls == 1


@pytest.fixture
def http_server() -> Any:
    """The FastMCP test server over streamable HTTP on a free port (no world)."""
    import socket
    import subprocess

    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    process = subprocess.Popen(
        [sys.executable, str(SERVER), "--http", str(port)],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        try:
            socket.create_connection(("127.0.0.1", port), timeout=1).close()
            break
        except OSError:
            time.sleep(0.05)
    yield f"http://127.0.0.1:{port}/mcp"
    process.kill()
    process.wait()


def test_a_server_reached_by_url_streams_progress_and_is_held_to_its_timeout(
    tmp_path: Path, http_server: str
) -> None:
    steps = [["call", "count", {"n": 2}], ["call", "hang", {}]]
    case = _case(tmp_path, steps)
    started = time.monotonic()
    trial = _live(case, tmp_path / "u.cassette", mcp_servers={
        "test": McpServer(url=http_server, timeout=1)
    })  # fmt: skip
    assert time.monotonic() - started < HANG_GUARD_S
    lines = (trial.trial.answer or "").splitlines()
    assert lines[:3] == ["progress 1/2 step 1", "progress 2/2 step 2", "count: counted to 2"]
    said = "MCP server 'test' did not answer tools/call within 1 s"
    assert said in lines[3]
    assert (trial.outcome.verdict.value, trial.outcome.evidence[0]) == ("error", f"server: {said}")


def test_a_server_that_lingers_after_its_session_is_stopped_with_its_children(
    tmp_path: Path,
) -> None:
    """A wrapper that outlives the server (``sh -c '...; sleep 600'``) does not hold the trial."""
    case = _case(tmp_path, [["call", "count", {"n": 1}]])
    wrapped = f'{sys.executable} {SERVER} "$0"; sleep 600'
    servers = {"test": McpServer(command=["sh", "-c", wrapped, "{world}"])}
    started = time.monotonic()
    trial = _live(case, tmp_path / "w.cassette", mcp_servers=servers)
    assert trial.outcome.verdict.value == "pass", trial.outcome.evidence
    assert time.monotonic() - started < HANG_GUARD_S
