"""Agents built on real frameworks, unmodified, against the stub LLM on 127.0.0.1.

For each of openai-agents (Responses and chat-completions models), pydantic-ai,
LangGraph, litellm (sync and async) and hand-written loops over requests and
aiohttp: a session recorded as the team would record it (its own tools,
outside the harness: an async read, a parallel turn of two reads, a parallel
turn of two writes), shown; replayed offline with the LLM frozen and the stub
stopped (the same answer and world); a changed prompt refused naming the JSON
path that differs; and three sandbox trials that pass.
"""

from __future__ import annotations

import asyncio
import importlib
import inspect
import json
import sqlite3
from collections.abc import Callable
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest

from recorder import ToolEvent, read_cassette, record
from replay import load_case, offline, sandbox
from replay.graders import Verdict
from replay.stub_llm import StubLLM
from tests.helpers import REPO
from tests.helpers import replay as replay_cli

EXAMPLES = REPO / "examples" / "frameworks"
CASE = EXAMPLES / "cases" / "reserve.yaml"
AGENTS = {  # the agent (module:function) and the package it needs
    "openai-agents-responses": ("examples.frameworks.openai_agents_responses:agent", "agents"),
    "openai-agents-chat": ("examples.frameworks.openai_agents_chat:agent", "agents"),
    "pydantic-ai": ("examples.frameworks.pydantic_ai_agent:agent", "pydantic_ai"),
    "langgraph": ("examples.frameworks.langgraph_agent:agent", "langgraph"),
    "litellm-sync": ("examples.frameworks.litellm_agent:agent", "litellm"),
    "litellm-async": ("examples.frameworks.litellm_agent:async_agent", "litellm"),
    "requests": ("tests.frameworks.http_agents:requests_agent", "requests"),
    "aiohttp": ("tests.frameworks.http_agents:aiohttp_agent", "aiohttp"),
}
API = {"openai-agents-responses": "responses"}

pytestmark = pytest.mark.slow


def _agent(name: str) -> Callable[..., Any]:
    spec, package = AGENTS[name]
    pytest.importorskip(package, reason="the frameworks extra is not installed")
    module, _, function = spec.partition(":")
    agent: Callable[..., Any] = getattr(importlib.import_module(module), function)
    return agent


def _record(directory: Path, agent: Callable[..., Any], llm: StubLLM, stream: bool) -> Path:
    """Record the agent as a team would: its own world and tools, no harness around it."""
    from examples.frameworks import INSTRUCTION, make_tools

    conn = sqlite3.connect(directory / "inventory.db", check_same_thread=False)
    conn.executescript((EXAMPLES / "world.sql").read_text())
    tools = make_tools(conn)
    by_name = {t.name: t for t in tools}
    env = SimpleNamespace(
        functions=tools,
        tools=[t.openai_schema() for t in tools],
        call_tool=lambda name, arguments: by_name[name](**arguments),
        llm_base_url=llm.openai_base_url,
        api_key="sk-team",
        model=None,
        settings={"stream": stream},
    )
    out = directory / "reserve-mugs-0.cassette"
    with record(out, world=conn, case_id="reserve-mugs", fixture_source=str(CASE)) as rec:
        answer = agent(INSTRUCTION, env)
        rec.answer(asyncio.run(answer) if inspect.iscoroutine(answer) else answer)
    conn.close()
    return out


def _net(cassette_path: Path) -> dict[str, Any]:
    """The trial's net state diff, rows in key order (parallel calls finish in any order)."""
    footer = read_cassette(cassette_path).summary()
    return {
        table: sorted((c.model_dump() for c in rows), key=lambda c: json.dumps(c["key"]))
        for table, rows in (footer.state_diff or {}).items()
    }


@pytest.mark.parametrize("stream", [False, True], ids=["plain", "streamed"])
@pytest.mark.parametrize("name", AGENTS)
def test_a_framework_agent_records_replays_and_runs_unmodified(
    name: str, stream: bool, tmp_path: Path
) -> None:
    from examples.frameworks import ANSWER, make_tools, reserve_policy

    agent = _agent(name)
    case = load_case(CASE)
    with StubLLM(reserve_policy()) as llm:
        recorded_path = _record(tmp_path, agent, llm, stream)
        sandboxed = [
            sandbox(
                case,
                agent,
                make_tools,
                tmp_path / f"sandbox-{i}.cassette",
                llm_base_url=llm.openai_base_url,
                index=i,
                settings={"stream": stream},
            )
            for i in range(3)
        ]
    for trial in sandboxed:
        assert trial.outcome.verdict is Verdict.PASS, trial.outcome.evidence

    recorded = read_cassette(recorded_path)
    summary = recorded.summary()
    assert summary.final_answer == ANSWER
    assert summary.usage.llm_calls == 3 and summary.usage.tool_calls == 4
    assert summary.pins.model == "stub-inventory-1" and summary.pins.tool_schema_hash
    writes = [e for e in recorded.events if isinstance(e, ToolEvent) and e.name == "reserve"]
    assert sorted((e.args["sku"], sorted(e.delta or {})) for e in writes) == [
        ("mug", ["items", "reservations"]),
        ("plate", ["items", "reservations"]),
    ]
    for event in writes:  # each call of the parallel turn carries exactly its own rows
        assert [c.key for c in (event.delta or {})["items"]] == [[event.args["sku"]]]

    code, out, _ = replay_cli("show", "--json", str(recorded_path))
    assert code == 0
    apis = {e["llm"]["api"] for e in json.loads(out)["events"] if "llm" in e}
    assert apis == {API.get(name, "openai")}

    # Offline, the LLM frozen: the stub is stopped, so nothing could answer but the cassette.
    replayed = offline(
        case,
        agent,
        make_tools,
        recorded,
        tmp_path / "offline.cassette",
        llm_base_url="http://127.0.0.1:9/v1",
        settings={"stream": stream},
    )
    assert replayed.outcome.verdict is Verdict.PASS, replayed.outcome.evidence
    assert read_cassette(tmp_path / "offline.cassette").summary().final_answer == ANSWER
    assert _net(tmp_path / "offline.cassette") == _net(recorded_path)

    changed = offline(
        case,
        agent,
        make_tools,
        recorded,
        tmp_path / "changed.cassette",
        llm_base_url="http://127.0.0.1:9/v1",
        settings={"stream": stream, "instructions": "Reserve whatever is asked."},
    )
    assert changed.outcome.verdict is Verdict.UNSUPPORTED
    evidence = " ".join(changed.outcome.evidence)
    assert "fixture unsupported" in evidence
    assert '"You keep a small shop' in evidence and '-> "Reserve whatever is asked."' in evidence


async def _traced_agent(instruction: str, env: Any) -> str:
    """openai-agents with its trace exporter on, flushed before the trial ends."""
    from agents.tracing import get_trace_provider

    from examples.frameworks.openai_agents_responses import agent

    answer = await agent(instruction, env)
    get_trace_provider().force_flush()  # the exporter's POST to api.openai.com/v1/traces/ingest
    return answer


def test_the_sdk_s_trace_exporter_is_ignored_never_unsupported(tmp_path: Path) -> None:
    agents = pytest.importorskip("agents", reason="the frameworks extra is not installed")
    from examples.frameworks import make_tools, reserve_policy

    agents.set_tracing_disabled(False)
    agents.set_tracing_export_api_key("sk-trace-export")
    try:
        case = load_case(CASE)
        with StubLLM(reserve_policy()) as llm:
            first = sandbox(
                case,
                _traced_agent,
                make_tools,
                tmp_path / "a.cassette",
                llm_base_url=llm.openai_base_url,
            )
        again = offline(
            case,
            _traced_agent,
            make_tools,
            read_cassette(tmp_path / "a.cassette"),
            tmp_path / "b.cassette",
            llm_base_url="http://127.0.0.1:9/v1",
        )
    finally:
        agents.set_tracing_disabled(True)
    assert first.outcome.verdict is Verdict.PASS, first.outcome.evidence
    assert again.outcome.verdict is Verdict.PASS, again.outcome.evidence
    for path in (tmp_path / "a.cassette", tmp_path / "b.cassette"):
        cassette = read_cassette(path)
        assert cassette.summary().usage.ignored.get("api.openai.com/v1/traces", 0) >= 1
        assert not [
            e
            for e in cassette.events
            if "traces" in getattr(getattr(e, "request", None), "url", "")
        ]
