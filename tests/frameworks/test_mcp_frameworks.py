"""Framework agents whose tools come over MCP, from the trial's own MCP server (``env.mcp``).

openai-agents' ``MCPServerStreamableHttp`` and ``MCPServerStdio`` (the relay
command ``env.mcp.command``), pydantic-ai's ``MCPToolset`` and
``langchain-mcp-adapters`` (clients nobody here wrote) against the stub LLM:
three sandbox trials that pass, each MCP call a tool event with its delta
(``replay show`` lists them as tool steps); offline with the LLM frozen and the
stub stopped, the same answer and world; a changed argument is unsupported.
"""

from __future__ import annotations

import importlib
import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from recorder import ToolEvent, read_cassette
from replay import load_case, offline, sandbox
from replay.graders import Verdict
from replay.stub_llm import Reply, ScriptedPolicy, StubLLM, ToolCall
from tests.helpers import REPO
from tests.helpers import replay as replay_cli

CASE = REPO / "examples" / "frameworks" / "cases" / "reserve.yaml"
AGENTS = {  # the agent (in examples.frameworks.mcp_agents) and the package its client is in
    "openai-agents": ("openai_agents", "agents.mcp"),
    "openai-agents-stdio": ("openai_agents_stdio", "agents.mcp"),
    "pydantic-ai": ("pydantic_ai", "pydantic_ai.mcp"),
    "langchain-mcp-adapters": ("langgraph", "langchain_mcp_adapters"),
}

pytestmark = pytest.mark.slow


def _agent(name: str) -> Callable[..., Any]:
    function, package = AGENTS[name]
    pytest.importorskip("mcp", reason="the mcp extra is not installed")
    pytest.importorskip(package, reason="the frameworks extra is not installed")
    module = importlib.import_module("examples.frameworks.mcp_agents")
    agent: Callable[..., Any] = getattr(module, function)
    return agent


def _more_plates() -> ScriptedPolicy:
    """The reserve script, but 2 plates: an argument the recording never saw."""
    return ScriptedPolicy(
        [
            Reply(tool_calls=(ToolCall("check_stock", {"sku": "mug"}),)),
            Reply(tool_calls=(ToolCall("reserve", {"sku": "plate", "qty": 2}),)),
        ],
        final="done",
    )


@pytest.mark.parametrize("name", AGENTS)
def test_an_mcp_framework_agent_records_replays_and_is_refused_an_unseen_call(
    name: str, tmp_path: Path
) -> None:
    from examples.frameworks import ANSWER, make_tools, reserve_policy

    agent, case = _agent(name), load_case(CASE)
    with StubLLM(reserve_policy()) as llm:
        trials = [
            sandbox(
                case,
                agent,
                make_tools,
                tmp_path / f"sandbox-{i}.cassette",
                llm_base_url=llm.openai_base_url,
                index=i,
            )
            for i in range(3)
        ]
    for trial in trials:
        assert trial.outcome.verdict is Verdict.PASS, trial.outcome.evidence
    recorded = read_cassette(tmp_path / "sandbox-0.cassette")
    calls = [e for e in recorded.events if isinstance(e, ToolEvent)]
    assert sorted((c.name, c.args["sku"]) for c in calls) == [
        ("check_stock", "mug"),
        ("check_stock", "plate"),
        ("reserve", "mug"),
        ("reserve", "plate"),
    ]
    for call in calls:
        if call.name == "reserve":  # each call of the parallel turn carries exactly its own rows
            assert [c.key for c in (call.delta or {})["items"]] == [[call.args["sku"]]]
    code, out, _ = replay_cli("show", "--json", str(tmp_path / "sandbox-0.cassette"))
    assert code == 0
    assert sum(1 for e in json.loads(out)["events"] if e.get("kind") == "tool") == 4

    # Offline, the LLM frozen: the stub is stopped; the MCP calls answer from the cassette.
    replayed = offline(case, agent, make_tools, recorded, tmp_path / "offline.cassette")
    assert replayed.outcome.verdict is Verdict.PASS, replayed.outcome.evidence
    assert replayed.trial.answer == ANSWER
    assert replayed.trial.diff == trials[0].trial.diff

    with StubLLM(_more_plates()) as llm:
        changed = offline(
            case,
            agent,
            make_tools,
            recorded,
            tmp_path / "changed.cassette",
            llm="live",
            llm_base_url=llm.openai_base_url,
        )
    assert changed.outcome.verdict is Verdict.UNSUPPORTED
    evidence = " ".join(changed.outcome.evidence)
    assert (
        "fixture unsupported: reserve(sku='plate', qty=2); nearest recorded: reserve(" in evidence
    )
