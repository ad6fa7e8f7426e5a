"""An agent in another language gets the trial's MCP addresses as environment variables.

``env.variables()`` is all the node agent (``node_mcp_agent.mjs``) is given: its
calls to the trial's own tools and to a third-party server's proxy are recorded
as any agent's, graded, and replayed offline with nothing run.
"""

from __future__ import annotations

import json
import shutil
import sys
from pathlib import Path
from typing import Any

import pytest

from recorder import ToolEvent, read_cassette
from replay import McpServer, load_case, offline, sandbox
from replay.modes import NO_LLM_URL
from tests.helpers import REPO
from tests.replay.mcp_agents import in_node, no_tools

pytest.importorskip("mcp", reason="the mcp SDK is not installed (pip install 'agent-replay[mcp]')")
pytestmark = pytest.mark.skipif(
    shutil.which("node") is None, reason="node is not installed (.ci/run installs nodejs)"
)
RESERVE = [
    ["check_stock", {"sku": "mug"}],
    ["reserve", {"sku": "mug", "qty": 2}],
]


def _case(
    tmp_path: Path, calls: list[Any], fixture: str, tables: list[str], checks: list[str]
) -> Any:
    shutil.copyfile(fixture, tmp_path / "world.sql")
    text = {
        "id": "in-node",
        "instruction": json.dumps(calls),
        "fixture": "world.sql",
        "allowed_tables": tables,
        "assert": [*checks, "no_side_effects"],
    }
    (tmp_path / "case.yaml").write_text(json.dumps(text))  # JSON is YAML
    return load_case(tmp_path / "case.yaml")


def test_a_node_agent_uses_the_trial_s_tools_and_is_replayed_offline(tmp_path: Path) -> None:
    from examples.frameworks.tools import make_tools

    checks = ['reservations.where(sku="mug").qty == 2', 'items["mug"].stock == 3']
    world = str(REPO / "examples/frameworks/world.sql")
    case = _case(tmp_path, RESERVE, world, ["items", "reservations"], checks)
    live = sandbox(case, in_node, make_tools, tmp_path / "live.cassette", llm_base_url=NO_LLM_URL)
    assert live.outcome.verdict.value == "pass", live.outcome.evidence
    assert live.trial.answer.splitlines()[1].startswith("reserve: ")
    events = read_cassette(tmp_path / "live.cassette").events
    calls = [e for e in events if isinstance(e, ToolEvent)]
    assert [e.name for e in calls] == ["check_stock", "reserve"]
    assert calls[1].delta and "reservations" in calls[1].delta

    recorded = read_cassette(tmp_path / "live.cassette")
    again = offline(case, in_node, make_tools, recorded, tmp_path / "o")
    assert again.outcome.verdict.value == "pass", again.outcome.evidence
    assert again.trial.answer == live.trial.answer
    assert again.trial.diff == live.trial.diff


def test_a_node_agent_reaches_a_third_party_server_through_the_proxy(tmp_path: Path) -> None:
    fixture = tmp_path / "notes.sql"
    fixture.write_text("CREATE TABLE notes (id INTEGER PRIMARY KEY, text TEXT NOT NULL);\n")
    calls = [["note", {"text": "from node"}]]
    case = _case(tmp_path, calls, str(fixture), ["notes"], ['notes.count(text="from node") == 1'])
    server = Path(__file__).with_name("mcp_test_server.py")
    servers = {"test": McpServer(command=[sys.executable, str(server), "{world}"])}
    trial = sandbox(
        case, in_node, no_tools, tmp_path / "t.cassette", llm_base_url=NO_LLM_URL,
        mcp_servers=servers, settings={"variable": "REPLAY_MCP_TEST_URL"},
    )  # fmt: skip
    assert trial.outcome.verdict.value == "pass", trial.outcome.evidence
    assert trial.trial.answer == "note: noted from node"

    nowhere = {"test": McpServer(command=[str(tmp_path / "no-such-server")])}
    again = offline(
        case, in_node, no_tools, read_cassette(tmp_path / "t.cassette"), tmp_path / "o",
        mcp_servers=nowhere, settings={"variable": "REPLAY_MCP_TEST_URL"},
    )  # fmt: skip
    assert again.outcome.verdict.value == "pass", again.outcome.evidence
    assert again.trial.answer == trial.trial.answer
    assert again.trial.diff == trial.trial.diff
