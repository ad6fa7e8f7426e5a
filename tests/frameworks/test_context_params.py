"""Tools that take their framework's run context record the model's arguments only.

pydantic-ai's ``RunContext[Deps]`` (deps holding a sqlite connection, which no
JSON schema has), openai-agents' ``RunContextWrapper[Deps]``, LangChain's
injected arguments: ``recorder.tool`` leaves the context out of the schema and of
the recorded arguments and passes it on untouched, so the agent records, replays
offline (the LLM frozen, the stub stopped) and a changed prompt is a miss.
"""

from __future__ import annotations

import asyncio
import json
import sqlite3
from pathlib import Path
from typing import Annotated, Any

import pytest

from examples.frameworks import ANSWER, INSTRUCTION, reserve_policy
from recorder import FixtureUnsupported, HttpEvent, ToolEvent, playback, read_cassette, record, tool
from replay.stub_llm import StubLLM
from tests.helpers import REPO

WORLD = (REPO / "examples" / "frameworks" / "world.sql").read_text()
FRAMEWORKS = {"pydantic-ai": "pydantic_ai", "openai-agents": "agents"}

pytestmark = pytest.mark.slow


def _world() -> sqlite3.Connection:
    conn = sqlite3.connect(":memory:", check_same_thread=False)
    conn.executescript(WORLD)
    return conn


async def _run(name: str, base_url: str, conn: sqlite3.Connection, **how: str) -> str:
    from tests.frameworks.context_agents import Deps, openai_agents_agent, pydantic_ai_agent

    if name == "pydantic-ai":
        async with pydantic_ai_agent(base_url, **how) as agent:
            return str((await agent.run(INSTRUCTION, deps=Deps(conn))).output)
    from agents import Runner, set_tracing_disabled
    from openai import AsyncOpenAI

    set_tracing_disabled(True)
    async with AsyncOpenAI(base_url=base_url, api_key="sk-team") as client:
        agent = openai_agents_agent(client, **how)
        result = await Runner.run(agent, INSTRUCTION, context=Deps(conn))
    return str(result.final_output)


def _rows(conn: sqlite3.Connection) -> list[Any]:
    return conn.execute("SELECT sku, qty FROM reservations ORDER BY sku").fetchall()


@pytest.mark.parametrize("name", FRAMEWORKS)
def test_a_tool_taking_the_run_context_records_and_replays(name: str, tmp_path: Path) -> None:
    pytest.importorskip(FRAMEWORKS[name], reason="the frameworks extra is not installed")
    cassette = tmp_path / "reserve.cassette"
    conn = _world()
    with StubLLM(reserve_policy()) as llm:
        url = llm.openai_base_url
        with record(cassette, world=conn, case_id="reserve-mugs") as rec:
            rec.answer(asyncio.run(_run(name, url, conn)))

    recorded = read_cassette(cassette)
    summary = recorded.summary()
    assert (summary.status, summary.stopped, summary.final_answer) == ("ok", None, ANSWER)
    calls = sorted(
        (e.name, json.dumps(e.args, sort_keys=True))
        for e in recorded.events
        if isinstance(e, ToolEvent)
    )
    assert calls == [  # the model's arguments, nothing of the context
        ("check_stock", '{"sku": "mug"}'),
        ("check_stock", '{"sku": "plate"}'),
        ("reserve", '{"qty": 1, "sku": "plate"}'),
        ("reserve", '{"qty": 2, "sku": "mug"}'),
    ]
    first = next(e for e in recorded.events if isinstance(e, HttpEvent))
    schemas = json.loads(first.request.body or b"{}")["tools"]
    assert {
        s["function"]["name"]: sorted(s["function"]["parameters"]["properties"]) for s in schemas
    } == {
        "check_stock": ["sku"],
        "reserve": ["qty", "sku"],
    }

    again = _world()  # offline: the stub is stopped, only the cassette answers the LLM calls
    with playback(cassette):
        assert asyncio.run(_run(name, url, again)) == ANSWER
    assert _rows(again) == _rows(conn) == [("mug", 2), ("plate", 1)]

    with pytest.raises(FixtureUnsupported, match=r"messages\[0\]\.content"), playback(cassette):
        asyncio.run(_run(name, url, _world(), instructions="Reserve whatever is asked."))


def test_langchain_s_injected_arguments_are_neither_schema_nor_recorded(tmp_path: Path) -> None:
    pytest.importorskip("langchain_core", reason="the frameworks extra is not installed")
    from langchain_core.tools import tool as langchain_tool

    from tests.frameworks.context_agents import langchain_check_stock

    recorded_tool = tool(langchain_check_stock())
    assert sorted(recorded_tool.context) == ["call_id", "config"]
    assert list(recorded_tool.parameters["properties"]) == ["sku"]
    wrapped = langchain_tool(recorded_tool)
    assert list(wrapped.tool_call_schema.model_json_schema()["properties"]) == ["sku"]
    call = {"type": "tool_call", "id": "call-1", "name": "check_stock", "args": {"sku": "mug"}}
    with record(tmp_path / "lc.cassette") as rec:
        message = wrapped.invoke(call)
        rec.answer(str(message.content))
    assert message.content == "mug: 3 in stock (call call-1, run callbacks)"  # passed untouched
    (event,) = [
        e for e in read_cassette(tmp_path / "lc.cassette").events if isinstance(e, ToolEvent)
    ]
    assert event.args == {"sku": "mug"}


def test_langgraph_s_runtime_and_state_are_context() -> None:
    pytest.importorskip("langgraph", reason="the frameworks extra is not installed")
    from langgraph.prebuilt import InjectedState, ToolRuntime

    def lookup(
        sku: str, runtime: ToolRuntime, state: Annotated[dict[str, Any], InjectedState]
    ) -> str:
        """Look up an item."""
        return sku

    assert tool(lookup).context == frozenset({"runtime", "state"})
    assert list(tool(lookup).parameters["properties"]) == ["sku"]
