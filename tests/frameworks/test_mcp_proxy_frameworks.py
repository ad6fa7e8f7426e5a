"""Framework agents against third-party MCP servers behind the recording proxy (env.mcp_servers).

openai-agents (``MCPServerStreamableHttp``, ``MCPServerStdio``), pydantic-ai's
``MCPToolset`` (stdio) and ``langchain-mcp-adapters`` + LangGraph (HTTP), the
stub LLM scripted (``examples/frameworks/mcp_proxy_agents.py``), each against
``mcp-server-sqlite`` (given the trial's world) and ``mcp-server-time`` (no
world). With sqlite: three sandbox trials pass the case's state assertions,
every MCP call is a tool step of ``replay show`` (the write with the rows it
wrote); offline with the LLM frozen and the server's command a path that does
not exist, the same answer and world; a changed argument is ``unsupported``.
With time: three sandbox trials pass (nothing changed, the time answered), the
call is a step of ``replay show``, offline answers the recorded time (the frozen
LLM's requests, which carry the tool result, match the recording's), another
timezone is unsupported.

The proxy's own calls (``mcp:<server>:...``) are left out of what is asserted:
which of them there are, and how a result is recorded, are the proxy's business.
"""

from __future__ import annotations

import json
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from examples.frameworks import mcp_proxy_agents as example
from recorder import ToolEvent, read_cassette
from replay import McpServer, load_case, offline, sandbox
from replay.graders import Verdict
from replay.stub_llm import Policy, StubLLM
from tests.helpers import REPO
from tests.helpers import replay as replay_cli

CASES = REPO / "examples" / "frameworks" / "mcp_cases"
AGENTS = {  # the agent (in examples.frameworks.mcp_proxy_agents) and the package its client is in
    "openai-agents": ("openai_agents", "agents.mcp"),
    "openai-agents-stdio": ("openai_agents_stdio", "agents.mcp"),
    "pydantic-ai": ("pydantic_ai", "pydantic_ai.mcp"),
    "langchain-mcp-adapters": ("langgraph", "langchain_mcp_adapters"),
}
SERVERS = {  # the server's name, its command ("{server}": the executable) and its case
    "sqlite": (["{server}", "--db-path", "{world}"], "notes.yaml"),
    "time": (["{server}", "--local-timezone", "UTC"], "time.yaml"),
}

pytestmark = pytest.mark.slow


def _agent(name: str) -> Callable[..., Any]:
    function, package = AGENTS[name]
    pytest.importorskip("mcp", reason="the mcp extra is not installed")
    pytest.importorskip(package, reason="the frameworks extra is not installed")
    agent: Callable[..., Any] = getattr(example, function)
    return agent


def _servers(server: str, executable: Path | None = None) -> dict[str, McpServer]:
    """``{server: McpServer}``: the pinned one installed beside python, or ``executable``."""
    beside = Path(sys.executable).with_name(f"mcp-server-{server}")
    if executable is None and not beside.exists():
        pytest.skip(f"mcp-server-{server} is not installed (the frameworks extra pins it)")
    command, _ = SERVERS[server]
    filled = [str(executable or beside) if part == "{server}" else part for part in command]
    return {server: McpServer(command=filled)}


def _offline(
    agent: Callable[..., Any], server: str, tmp_path: Path, out: str, **kwargs: Any
) -> Any:
    """Offline against the recording, the server's command a path that does not exist."""
    nowhere = _servers(server, tmp_path / "no-such-server")  # it would fail if started
    case = load_case(CASES / SERVERS[server][1])
    recorded = read_cassette(tmp_path / "sandbox-0.cassette")
    return offline(
        case, agent, example.no_tools, recorded, tmp_path / out, mcp_servers=nowhere, **kwargs
    )


def _record(
    agent: Callable[..., Any], server: str, policy: Policy, tmp_path: Path, trials: int
) -> list[Any]:
    """``trials`` sandbox trials with the real server and the live stub LLM, all passing."""
    case, servers = load_case(CASES / SERVERS[server][1]), _servers(server)
    with StubLLM(policy) as llm:
        results = [
            sandbox(
                case,
                agent,
                example.no_tools,
                tmp_path / f"sandbox-{i}.cassette",
                llm_base_url=llm.openai_base_url,
                index=i,
                mcp_servers=servers,
            )
            for i in range(trials)
        ]
    for result in results:
        assert result.outcome.verdict is Verdict.PASS, result.outcome.evidence
    return results


def _refused(agent: Callable[..., Any], server: str, policy: Policy, tmp_path: Path) -> str:
    """Offline with a live LLM that asks what the recording never saw: the evidence."""
    with StubLLM(policy) as llm:
        changed = _offline(
            agent,
            server,
            tmp_path,
            "changed.cassette",
            llm="live",
            llm_base_url=llm.openai_base_url,
        )
    assert changed.outcome.verdict is Verdict.UNSUPPORTED, changed.outcome.evidence
    return " ".join(changed.outcome.evidence)


@pytest.mark.parametrize("name", AGENTS)
def test_a_framework_agent_writes_through_mcp_server_sqlite_and_replays_it(
    name: str, tmp_path: Path
) -> None:
    agent = _agent(name)
    trials = _record(agent, "sqlite", example.notes_policy("hello"), tmp_path, trials=3)
    answer = trials[0].trial.answer
    assert "hello" in answer  # the note the server read back

    cassette = tmp_path / "sandbox-0.cassette"
    code, out, _ = replay_cli("show", "--json", str(cassette))
    assert code == 0
    steps = [
        e
        for e in json.loads(out)["events"]
        if e["kind"] == "tool" and not e["name"].startswith("mcp:")
    ]
    assert [s["name"] for s in steps] == ["list_tables", "write_query", "read_query"]
    assert [c["after"] for c in steps[1]["delta"]["notes"]] == [{"id": 1, "text": "hello"}]
    assert not steps[0]["delta"] and not steps[2]["delta"]
    code, out, _ = replay_cli("show", str(cassette))
    assert code == 0 and all(f"tool {s['name']}(" in out for s in steps)
    assert any(r.strip().startswith("+ notes") and "'hello'" in r for r in out.splitlines())

    # The LLM frozen: its requests (the tool results in them) must match the recording's.
    again = _offline(agent, "sqlite", tmp_path, "offline.cassette")
    assert again.outcome.verdict is Verdict.PASS, again.outcome.evidence
    assert again.trial.answer == answer
    assert again.trial.diff == trials[0].trial.diff
    replayed = [e for e in again.trial.cassette.events if isinstance(e, ToolEvent)]
    assert [e.name for e in replayed if not e.name.startswith("mcp:")] == [
        "list_tables", "write_query", "read_query",
    ]  # fmt: skip

    evidence = _refused(agent, "sqlite", example.notes_policy("bye"), tmp_path)
    unseen = "write_query(query=\"INSERT INTO notes (text) VALUES ('bye')\")"
    assert f"fixture unsupported: {unseen}" in evidence, evidence


@pytest.mark.parametrize("name", AGENTS)
def test_a_framework_agent_asks_mcp_server_time_and_offline_answers_the_recorded_time(
    name: str, tmp_path: Path
) -> None:
    agent = _agent(name)
    trials = _record(agent, "time", example.time_policy("UTC"), tmp_path, trials=3)
    answer = trials[0].trial.answer
    assert "UTC" in answer and "datetime" in answer, answer  # the tool's result, quoted
    code, out, _ = replay_cli("show", str(tmp_path / "sandbox-0.cassette"))
    assert code == 0 and "tool get_current_time(timezone='UTC')" in out, out

    again = _offline(agent, "time", tmp_path, "offline.cassette")  # the LLM frozen
    assert again.outcome.verdict is Verdict.PASS, again.outcome.evidence
    assert again.trial.answer == answer  # the recorded time, to the second
    assert not again.trial.diff

    evidence = _refused(agent, "time", example.time_policy("Europe/Paris"), tmp_path)
    assert "fixture unsupported: get_current_time(timezone='Europe/Paris')" in evidence, evidence
