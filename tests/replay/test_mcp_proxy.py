"""A third-party MCP server (mcp-server-sqlite) behind the recording proxy, in every mode."""

from __future__ import annotations

import shutil
import sys
from pathlib import Path

import pytest

from recorder import ToolEvent, read_cassette
from replay import McpServer, load_case, offline, sandbox
from replay.modes import NO_LLM_URL
from tests.replay.mcp_agents import notes_over_sqlite, time_in

pytest.importorskip("mcp", reason="the mcp SDK is not installed (pip install 'agent-replay[mcp]')")
_BESIDE = Path(sys.executable).with_name("mcp-server-sqlite")  # this venv's, PATH or not
SERVER = str(_BESIDE) if _BESIDE.exists() else shutil.which("mcp-server-sqlite")
pytestmark = pytest.mark.skipif(
    SERVER is None, reason="mcp-server-sqlite is not installed (the frameworks extra pins it)"
)

CASE = """\
id: notes
instruction: Write the note "hello".
fixture: notes.sql
allowed_tables: [notes]
assert:
  - notes.count(text="hello") == 1
  - no_side_effects
"""


def _no_tools(conn):  # type: ignore[no-untyped-def]
    return []


@pytest.fixture
def case(tmp_path: Path):  # type: ignore[no-untyped-def]
    (tmp_path / "notes.sql").write_text(
        "CREATE TABLE notes (id INTEGER PRIMARY KEY, text TEXT NOT NULL);\n"
        "CREATE TABLE other (id INTEGER PRIMARY KEY);\n"
    )
    (tmp_path / "notes.yaml").write_text(CASE)
    return load_case(tmp_path / "notes.yaml")


def _servers(command: str | None = None) -> dict[str, object]:
    return {"sqlite": McpServer(command=[command or str(SERVER), "--db-path", "{world}"])}


def _sandbox(case, out: Path, **kwargs):  # type: ignore[no-untyped-def]
    return sandbox(case, notes_over_sqlite, _no_tools, out, llm_base_url=NO_LLM_URL, **kwargs)


def test_a_third_party_server_s_calls_are_tool_events_with_the_rows_it_wrote(
    case, tmp_path: Path
) -> None:
    trials = [_sandbox(case, tmp_path / f"s{i}.cassette", mcp_servers=_servers()) for i in range(3)]
    for trial in trials:
        assert trial.outcome.verdict.value == "pass", trial.outcome.evidence
        assert trial.trial.answer == "noted: [{'text': 'hello'}]"
    events = [e for e in read_cassette(tmp_path / "s0.cassette").events if isinstance(e, ToolEvent)]
    assert [e.name for e in events] == [
        "mcp:sqlite:initialize", "mcp:sqlite:tools/list", "list_tables", "write_query",
        "read_query",
    ]  # fmt: skip
    written = events[3]
    assert written.delta is not None and [c.after for c in written.delta["notes"]] == [
        {"id": 1, "text": "hello"}
    ]
    assert not events[4].delta  # a read changes nothing


def test_offline_never_starts_the_server_and_an_unseen_call_is_unsupported(
    case, tmp_path: Path
) -> None:
    recorded = _sandbox(case, tmp_path / "s.cassette", mcp_servers=_servers())
    assert recorded.outcome.verdict.value == "pass", recorded.outcome.evidence
    cassette = read_cassette(tmp_path / "s.cassette")
    nowhere = _servers(command=str(tmp_path / "no-such-server"))  # would fail if started
    again = offline(
        case, notes_over_sqlite, _no_tools, cassette, tmp_path / "o", mcp_servers=nowhere
    )
    assert again.outcome.verdict.value == "pass", again.outcome.evidence
    assert again.trial.answer == recorded.trial.answer
    assert again.trial.diff == recorded.trial.diff
    changed = offline(
        case, notes_over_sqlite, _no_tools, cassette, tmp_path / "c",
        mcp_servers=nowhere, settings={"text": "bye"},
    )  # fmt: skip
    assert changed.outcome.verdict.value == "unsupported"
    assert "fixture unsupported: write_query(query=" in (changed.trial.answer or "")


def test_a_server_that_does_not_start_is_an_error_naming_it(case, tmp_path: Path) -> None:
    broken = _sandbox(
        case, tmp_path / "b.cassette", mcp_servers=_servers(command=str(tmp_path / "nothing"))
    )
    assert broken.outcome.verdict.value == "error"
    assert broken.outcome.cause is not None and broken.outcome.cause.value == "server"
    (line,) = [e for e in broken.outcome.evidence if e.startswith("server:")]
    assert "MCP server 'sqlite'" in line and "did not start" in line, line


def test_a_server_without_a_world_is_recorded_and_replayed_over_stdio(case, tmp_path: Path) -> None:
    """mcp-server-time over the proxy's stdio command: offline answers the recorded time."""
    time_server = Path(sys.executable).with_name("mcp-server-time")
    if not time_server.exists():
        pytest.skip("mcp-server-time is not installed (the frameworks extra pins it)")
    servers = {"time": McpServer(command=[str(time_server), "--local-timezone", "UTC"])}
    first = sandbox(
        case, time_in, _no_tools, tmp_path / "t.cassette", llm_base_url=NO_LLM_URL,
        mcp_servers=servers,
    )  # fmt: skip
    answer = first.trial.answer or ""
    assert '"timezone": "UTC"' in answer, answer
    recorded = read_cassette(tmp_path / "t.cassette")
    nowhere = {"time": McpServer(command=[str(tmp_path / "no-such-server")])}
    again = offline(case, time_in, _no_tools, recorded, tmp_path / "o", mcp_servers=nowhere)
    assert again.trial.answer == answer  # the recorded time, to the second
    paris = offline(
        case, time_in, _no_tools, recorded, tmp_path / "p", mcp_servers=nowhere,
        settings={"timezone": "Europe/Paris"},
    )  # fmt: skip
    assert paris.outcome.verdict.value == "unsupported"
