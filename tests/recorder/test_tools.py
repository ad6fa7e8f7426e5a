"""@tool: schemas from type hints, calls recorded with results, errors and effects."""

from __future__ import annotations

import asyncio
import json
import sqlite3
from pathlib import Path
from typing import Any, Literal

import httpx
import pytest
from pydantic import BaseModel

from recorder import (
    Tool,
    ToolEvent,
    ToolSchemaError,
    WarningEvent,
    read_cassette,
    record,
    tool,
    tool_schema_hash,
)
from replay.stub_llm import Reply, ScriptedPolicy, StubLLM, ToolCall
from tests.helpers import replay as replay_cli


class Address(BaseModel):
    city: str
    zip: str


@tool(writes=True)
def ship(order_id: int, address: Address, speed: Literal["slow", "fast"] = "slow") -> Address:
    """Ship an order.

    Args:
        order_id: The order to ship.
        address: Where to.
        speed: How fast.
    """
    return address


def tool_events(path: Path) -> list[ToolEvent]:
    return [e for e in read_cassette(path).events if isinstance(e, ToolEvent)]


def test_schema_comes_from_type_hints_and_docstring() -> None:
    schema = ship.openai_schema()
    assert schema["function"]["name"] == "ship"
    assert schema["function"]["description"] == "Ship an order."
    params = schema["function"]["parameters"]
    assert params["required"] == ["order_id", "address"]
    assert params["properties"]["order_id"] == {
        "type": "integer",
        "description": "The order to ship.",
    }
    assert params["properties"]["speed"]["enum"] == ["slow", "fast"]
    assert "$defs" in params and "Address" in params["$defs"]
    assert ship.anthropic_schema()["input_schema"] == params
    json.dumps(schema)  # hand-able to a model as is


def test_call_is_recorded_with_args_result_and_effect(cassette_path: Path) -> None:
    with record(cassette_path):
        out = ship(7, Address(city="Lyon", zip="69001"))
    assert out == Address(city="Lyon", zip="69001")  # the caller gets the real object
    (event,) = tool_events(cassette_path)
    assert event.name == "ship" and event.effect == "write"
    assert event.args == {
        "order_id": 7,
        "address": {"city": "Lyon", "zip": "69001"},
        "speed": "slow",
    }
    assert event.result == {"city": "Lyon", "zip": "69001"}
    assert event.error is None and event.duration >= 0 and event.delta is None


def test_exception_is_recorded_and_propagates(cassette_path: Path) -> None:
    @tool
    def lookup(order_id: int) -> None:
        raise KeyError(order_id)

    with record(cassette_path), pytest.raises(KeyError):
        lookup(order_id=404)
    (event,) = tool_events(cassette_path)
    assert event.effect == "read" and event.result is None
    assert event.error is not None and event.error.type == "builtins.KeyError"
    assert "raise KeyError" in (event.error.traceback or "")


def test_async_tools_are_recorded(cassette_path: Path) -> None:
    @tool
    async def fetch(n: int) -> list[int]:
        await asyncio.sleep(0)
        return list(range(n))

    async def agent() -> list[int]:
        return await fetch(3)

    with record(cassette_path):
        assert asyncio.run(agent()) == [0, 1, 2]
    (event,) = tool_events(cassette_path)
    assert event.name == "fetch" and event.result == [0, 1, 2]


def test_an_async_tool_is_a_coroutine_function_with_the_function_s_signature() -> None:
    # Frameworks decide by inspect.iscoroutinefunction whether to await a tool, and build
    # its schema from the signature, hints and docstring: told "not async", openai-agents
    # and langgraph called it without awaiting and sent the model a coroutine's repr.
    import inspect
    import typing

    async def reserve(sku: str, qty: int = 1) -> dict[str, int]:
        """Reserve stock.

        Args:
            sku: The item.
        """
        return {sku: qty}

    def lookup(sku: str) -> int:
        return 0

    wrapped = tool(reserve, writes=True)
    assert inspect.iscoroutinefunction(wrapped) and asyncio.iscoroutinefunction(wrapped)
    assert not inspect.iscoroutinefunction(tool(lookup))
    assert inspect.signature(wrapped) == inspect.signature(reserve)
    assert typing.get_type_hints(wrapped) == typing.get_type_hints(reserve)
    assert inspect.getdoc(wrapped) == inspect.getdoc(reserve)
    assert wrapped.__name__ == "reserve"

    class Shop:
        @tool
        async def stock(self, sku: str) -> int:
            return 3

    assert inspect.iscoroutinefunction(Shop().stock)
    assert asyncio.run(Shop().stock("mug")) == 3


def test_nested_tools_record_only_the_outer_call(cassette_path: Path) -> None:
    @tool
    def inner(x: int) -> int:
        return x + 1

    @tool
    def outer(x: int) -> int:
        return inner(x) * 2

    with record(cassette_path):
        assert outer(1) == 4
    assert [e.name for e in tool_events(cassette_path)] == ["outer"]


def test_wrapping_a_function_you_do_not_own(cassette_path: Path) -> None:
    dumps = tool(json.dumps, name="to_json", description="Serialise a value.")
    assert isinstance(dumps, Tool) and dumps.name == "to_json"
    assert "obj" in dumps.parameters["properties"]  # **kw is left out of the schema
    with record(cassette_path):
        assert dumps({"b": 1, "a": 2}, sort_keys=True) == '{"a": 2, "b": 1}'
    (event,) = tool_events(cassette_path)
    assert event.name == "to_json" and event.result == '{"a": 2, "b": 1}'
    assert event.args["obj"] == {"b": 1, "a": 2} and event.args["sort_keys"] is True
    assert "kw" not in event.args  # **kw holds nothing here; its items are recorded flat


def test_keyword_catch_alls_are_recorded_flat(cassette_path: Path) -> None:
    @tool
    def search(**filters: str) -> int:
        return len(filters)

    with record(cassette_path):
        search(city="Lyon", status="paid")
    assert tool_events(cassette_path)[0].args == {"city": "Lyon", "status": "paid"}


def test_hints_without_a_json_schema_are_refused_clearly() -> None:
    def query(conn: sqlite3.Connection, sql: str) -> None: ...

    with pytest.raises(ToolSchemaError, match=r"tool 'query': its type hints have no JSON schema"):
        tool(query)


def test_outside_a_recording_a_tool_is_the_plain_function() -> None:
    assert ship(1, Address(city="a", zip="b"), speed="fast").city == "a"


def test_schema_hash_pins_the_tool_set() -> None:
    @tool
    def a(x: int) -> int:
        return x

    @tool
    def a2(x: str) -> str:
        return x

    assert tool_schema_hash([a]) == tool_schema_hash([a.openai_schema()])
    assert tool_schema_hash([a]) != tool_schema_hash([tool(a2.fn, name="a")])
    assert len(tool_schema_hash([a, ship])) == 16


def _agent_loop(base_url: str, tools: dict[str, Any]) -> str:
    """A hand-written loop on httpx: the LLM's tool calls go to ``tools``."""
    messages: list[dict[str, Any]] = [{"role": "user", "content": "How many mugs?"}]
    spec = [{"type": "function", "function": {"name": "stock", "parameters": {}}}]
    with httpx.Client(base_url=base_url) as client:
        while True:
            body = {"model": "m", "messages": messages, "tools": spec}
            message = client.post("/chat/completions", json=body).json()["choices"][0]["message"]
            if not message.get("tool_calls"):
                return str(message["content"])
            messages.append(message)
            for call in message["tool_calls"]:
                value = tools[call["function"]["name"]](**json.loads(call["function"]["arguments"]))
                messages.append({"role": "tool", "tool_call_id": call["id"], "content": str(value)})


def _warnings(path: Path) -> list[str]:
    return [e.message for e in read_cassette(path).events if isinstance(e, WarningEvent)]


def test_tool_calls_the_llm_asked_for_but_nobody_recorded_are_warned_of(tmp_path: Path) -> None:
    """Tools left unwrapped: the cassette says so instead of a quiet "ok" (issue 30, point 6)."""

    def stock(sku: str) -> int:
        return 4

    script = ScriptedPolicy([Reply(tool_calls=(ToolCall("stock", {"sku": "mug"}),) * 2)], "4")
    with StubLLM(script) as llm:
        with record(tmp_path / "bare.cassette"):
            assert _agent_loop(llm.openai_base_url, {"stock": stock}) == "4"
        with record(tmp_path / "wrapped.cassette"):
            assert _agent_loop(llm.openai_base_url, {"stock": tool(stock)}) == "4"
    assert _warnings(tmp_path / "bare.cassette") == [
        "the LLM asked for 2 tool calls and no tool call was recorded: wrap the agent's tools "
        "with recorder.tool (or serve them over MCP) so that the cassette holds their calls "
        "and what they changed"
    ]
    assert _warnings(tmp_path / "wrapped.cassette") == []
    assert len(tool_events(tmp_path / "wrapped.cassette")) == 2
    # The capture manifest says the same, channel by channel, in replay show and --json.
    code, shown, _ = replay_cli("show", str(tmp_path / "bare.cassette"))
    assert code == 0
    manifest = shown[shown.index("\ncaptured\n") :].split("\npins")[0]
    assert "llm    captured: 2 calls (openai)" in manifest
    assert "tools not seen: the LLM asked for 2 tool calls and no tool call was recorded" in (
        " ".join(manifest.split())
    )
    code, shown, _ = replay_cli("show", "--json", str(tmp_path / "wrapped.cassette"))
    channels = {c["channel"]: (c["state"], c["detail"]) for c in json.loads(shown)["manifest"]}
    assert channels["tools"] == ("captured", "2 calls")
    assert channels["world"] == ("not seen", "no world attached: no state diff to grade")


def test_a_tool_call_that_ends_the_run_is_structured_output_and_not_warned_of(
    tmp_path: Path,
) -> None:
    """pydantic-ai's ``final_result``: the answer comes as a tool call no tool runs."""
    script = ScriptedPolicy([Reply(tool_calls=(ToolCall("final_result", {"count": 4}),))])
    with StubLLM(script) as llm, record(tmp_path / "s.cassette"), httpx.Client() as client:
        body = {"model": "m", "messages": [{"role": "user", "content": "How many mugs?"}]}
        reply = client.post(llm.openai_base_url + "/chat/completions", json=body).json()
        assert reply["choices"][0]["message"]["tool_calls"][0]["function"]["name"] == "final_result"
    assert _warnings(tmp_path / "s.cassette") == []


def test_an_offline_run_over_a_recording_without_its_tools_says_so(tmp_path: Path) -> None:
    (tmp_path / "empty.sql").write_text("CREATE TABLE t (id INTEGER PRIMARY KEY);\n")
    (tmp_path / "ask.yaml").write_text("id: ask\ninstruction: Hi.\nfixture: empty.sql\n")
    script = ScriptedPolicy([Reply(tool_calls=(ToolCall("stock", {"sku": "mug"}),))], "4")
    (tmp_path / "rec").mkdir()
    with StubLLM(script) as llm, record(tmp_path / "rec" / "ask-0.cassette", case_id="ask"):
        _agent_loop(llm.openai_base_url, {"stock": lambda sku: 4})
    code, _, err = replay_cli(
        "run", str(tmp_path / "ask.yaml"), "--run", "off", "--mode", "offline",
        "--store", str(tmp_path / "r.db"), "--cassettes", str(tmp_path / "rec"),
        "--agent", "tests.replay.test_ignore_fields:agent",
        "--tools", "tests.replay.test_ignore_fields:no_tools",
    )  # fmt: skip
    assert code == 3, err  # (that agent asks otherwise: unsupported)
    assert "the LLM asked for 1 tool call and no tool call was recorded" in err
    assert "offline, its trials' verdicts rest on its LLM alone" in err


def test_a_forwarder_of_args_and_kwargs_has_no_context_but_a_named_one_among_them_does() -> None:
    def forward(*args: Any, **arguments: Any) -> Any:
        return arguments

    def framed(*args: Any, ctx: RunContext[int], **arguments: Any) -> Any:  # noqa: F821
        return arguments

    assert tool(forward, parameters={"type": "object"}).context == frozenset()
    assert tool(framed, parameters={"type": "object"}).context == {"ctx"}
