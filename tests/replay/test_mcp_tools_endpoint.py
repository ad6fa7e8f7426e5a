"""The trial's tools endpoint (``env.mcp``) at the wire: MCP's handshake, its tools, its refusals.

The official SDK's client and the frameworks' are run against it elsewhere
(``test_mcp_world.py``, ``tests/frameworks``); here, the messages themselves,
with no SDK installed or needed.
"""

from __future__ import annotations

import json
import urllib.request
from collections.abc import Iterator, Mapping
from typing import Any

import pytest

from replay.mcp import McpTools
from replay.mcp._tools import PROTOCOLS

SPEC = [
    {
        "type": "function",
        "function": {
            "name": "note",
            "description": "",  # (left out of tools/list, as the SDK leaves out a missing one)
            "parameters": {"type": "object", "properties": {"text": {"type": "string"}}},
        },
    }
]


@pytest.fixture
def endpoint() -> Iterator[tuple[McpTools, list[tuple[str, dict[str, Any]]]]]:
    calls: list[tuple[str, dict[str, Any]]] = []

    def call_tool(name: str, arguments: Mapping[str, Any]) -> Any:
        if name != "note":
            raise KeyError(f"unknown tool {name!r}")
        calls.append((name, dict(arguments)))
        return {"noted": len(calls)}

    tools = McpTools(SPEC, call_tool)
    yield tools, calls
    tools.close()


ACCEPT = "application/json, text/event-stream"


def _post(url: str, message: dict[str, Any]) -> tuple[int, Any]:
    request = urllib.request.Request(
        url,
        data=json.dumps(message).encode(),
        headers={
            "Content-Type": "application/json",
            "Accept": "application/json, text/event-stream",
        },
    )
    with urllib.request.urlopen(request, timeout=30) as answer:
        body = answer.read()
        return answer.status, json.loads(body) if body else None


def _rpc(url: str, method: str, params: Any = None) -> dict[str, Any]:
    status, answer = _post(url, {"jsonrpc": "2.0", "id": 7, "method": method, "params": params})
    assert status == 200 and answer["id"] == 7, answer
    return dict(answer)


def test_the_handshake_gives_the_version_asked_if_known_else_the_latest(endpoint: Any) -> None:
    tools, _ = endpoint
    for asked, given in [("2025-03-26", "2025-03-26"), ("2099-01-01", PROTOCOLS[-1])]:
        hello = _rpc(tools.url, "initialize", {"protocolVersion": asked, "capabilities": {}})
        assert hello["result"]["protocolVersion"] == given
        assert hello["result"]["capabilities"] == {"tools": {"listChanged": False}}
        assert hello["result"]["serverInfo"]["name"] == "agent-replay world"
    assert _rpc(tools.url, "ping")["result"] == {}


def test_tools_are_listed_and_called_in_the_trial_and_a_notification_is_accepted(
    endpoint: Any,
) -> None:
    tools, calls = endpoint
    listed = _rpc(tools.url, "tools/list")["result"]["tools"]
    assert listed == [{"name": "note", "inputSchema": SPEC[0]["function"]["parameters"]}]
    called = _rpc(tools.url, "tools/call", {"name": "note", "arguments": {"text": "hi"}})
    assert called["result"] == {
        "content": [{"type": "text", "text": '{"noted": 1}'}],
        "isError": False,
    }
    assert calls == [("note", {"text": "hi"})]
    unknown = _rpc(tools.url, "tools/call", {"name": "nope", "arguments": {}})
    assert unknown["result"]["isError"] is True  # a tool error the agent reads, not a fault
    assert "unknown tool 'nope'" in unknown["result"]["content"][0]["text"]
    status, body = _post(tools.url, {"jsonrpc": "2.0", "method": "notifications/initialized"})
    assert (status, body) == (202, None)
    assert len(calls) == 1


def test_what_it_does_not_serve_is_a_json_rpc_error_naming_it(endpoint: Any) -> None:
    tools, calls = endpoint
    missing = _rpc(tools.url, "resources/list")["error"]
    assert missing["code"] == -32601 and "resources/list" in missing["message"]
    bad = _rpc(tools.url, "tools/call", {"name": "note", "arguments": ["hi"]})["error"]
    assert bad["code"] == -32602 and "object of arguments" in bad["message"]
    assert calls == []
