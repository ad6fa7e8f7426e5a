"""A Python agent in a process of its own: ``--agent MOD:FN --isolation process``.

``python -m replay.modes._child MOD:FN`` runs inside the walls: it reads the
instruction on stdin, builds the agent's ``Environment`` from the variables
the trial gave it (``env.variables()``: the LLM through the recording proxy,
the tools over the trial's MCP server, the third-party servers' proxies, the
model and settings), calls the agent, and writes what it returned (or what it
raised) as JSON to the file ``REPLAY_ANSWER`` names. Its tool calls are MCP
calls, recorded in the harness with their deltas; nothing of the world, the
store or the harness's memory is in this process.

What differs from an in-process agent: ``call_tool`` returns the tool's result
as JSON decodes it (text that is not JSON stays text); ``env.functions`` are
built from the tools' schemas (keyword arguments, JSON types), not from their
Python signatures; ``env.user.say`` is a ``POST`` to the trial's user channel
(``REPLAY_USER_URL``), recorded there turn by turn.
"""

from __future__ import annotations

import asyncio
import inspect
import json
import keyword
import os
import sys
import traceback
import urllib.request
from collections.abc import Mapping
from typing import Any

from ._environment import Environment
from ._plan import load_callable

HEADERS = {"Content-Type": "application/json", "Accept": "application/json, text/event-stream"}


class ToolFailed(Exception):
    """A tool call over MCP answered with an error (its text)."""


class _Mcp:
    """What ``env.mcp`` and ``env.mcp_servers[name]`` give an agent: the addresses."""

    def __init__(self, url: str, command: list[str]) -> None:
        self.url, self.command = url, command

    def close(self) -> None:
        """Nothing to close: the trial owns the server."""


def _rpc(url: str, method: str, params: Mapping[str, Any]) -> Any:
    body = json.dumps({"jsonrpc": "2.0", "id": 1, "method": method, "params": params}).encode()
    request = urllib.request.Request(url, data=body, headers=HEADERS, method="POST")
    with urllib.request.urlopen(request, timeout=600) as response:
        text = response.read().decode()
    lines = [line[5:] for line in text.splitlines() if line.startswith("data:")]
    answer = json.loads(lines[-1] if lines else text)
    if "error" in answer:
        raise ToolFailed(answer["error"].get("message", "MCP error"))
    return answer["result"]


class UserFailed(Exception):
    """The simulated user could not answer (its error, as the harness told it)."""


class _User:
    """``env.user`` in the child: each turn a ``POST`` to the trial's user channel."""

    def __init__(self, url: str) -> None:
        self.url = url

    def say(self, text: str) -> str | None:
        """Tell the user ``text``; its answer, or None once it has ended the talk."""
        body = json.dumps({"text": text}).encode()
        request = urllib.request.Request(self.url, data=body, method="POST")
        request.add_header("Content-Type", "application/json")
        with urllib.request.urlopen(request, timeout=600) as response:
            answer = json.loads(response.read())
        if "error" in answer:
            raise UserFailed(f"{answer['error']['type']}: {answer['error']['message']}")
        reply = answer.get("reply")
        return None if reply is None else str(reply)


def environment(variables: Mapping[str, str]) -> Any:
    """The agent's ``Environment``, from the trial's variables."""
    url = variables["REPLAY_MCP_URL"]
    listed = _rpc(url, "tools/list", {}).get("tools", [])
    specs = [
        {
            "type": "function",
            "function": {
                "name": t["name"],
                "description": t.get("description") or "",
                "parameters": t.get("inputSchema") or {"type": "object"},
            },
        }
        for t in listed
    ]

    def call_tool(name: str, arguments: Mapping[str, Any]) -> Any:
        result = _rpc(url, "tools/call", {"name": name, "arguments": dict(arguments)})
        text = "".join(c.get("text", "") for c in result.get("content") or [])
        if result.get("isError"):
            raise ToolFailed(text)
        try:
            return json.loads(text)
        except ValueError:
            return text

    servers = json.loads(variables.get("REPLAY_MCP_SERVERS") or "{}")
    user = _User(variables["REPLAY_USER_URL"]) if variables.get("REPLAY_USER_URL") else None
    functions = [_function(t, call_tool) for t in listed]
    return Environment(
        specs,
        call_tool,
        variables["OPENAI_BASE_URL"],
        variables.get("REPLAY_MODEL"),
        json.loads(variables.get("REPLAY_SETTINGS") or "{}"),
        api_key=variables.get("OPENAI_API_KEY", "sk-replay"),
        functions=functions,
        user=user,  # type: ignore[arg-type]
        mcp=_Mcp(url, json.loads(variables["REPLAY_MCP_COMMAND"])),  # type: ignore[arg-type]
        mcp_servers={
            name: _Mcp(s["url"], s["command"])  # type: ignore[misc]
            for name, s in servers.items()
        },
    )


_TYPES: dict[str, Any] = {
    "string": str, "integer": int, "number": float, "boolean": bool, "array": list, "object": dict,
}  # fmt: skip


def _function(listed: Mapping[str, Any], call_tool: Any) -> Any:
    """A listed tool as a plain function with a signature from its schema, for a framework."""
    schema = listed.get("inputSchema") or {}
    required = set(schema.get("required") or [])
    properties = schema.get("properties") or {}
    if not all(str(name).isidentifier() for name in properties):  # ("from", "max-results")
        properties = {}  # a **arguments signature: the framework passes what the model gave
    parameters = [
        inspect.Parameter(
            name,
            inspect.Parameter.KEYWORD_ONLY,
            default=inspect.Parameter.empty if name in required else None,
            annotation=_TYPES.get(str(spec.get("type")), Any),
        )
        for name, spec in properties.items()
        if not keyword.iskeyword(name)
    ]
    if len(parameters) < len(properties):
        parameters = []
    parameters.sort(key=lambda p: p.default is not inspect.Parameter.empty)

    def call(**arguments: Any) -> Any:
        return call_tool(listed["name"], arguments)

    if not parameters and (schema.get("properties") or {}):
        parameters = [inspect.Parameter("arguments", inspect.Parameter.VAR_KEYWORD)]
    call.__signature__ = inspect.Signature(parameters)  # type: ignore[attr-defined]
    call.__annotations__ = {
        p.name: p.annotation for p in parameters if p.annotation is not inspect.Parameter.empty
    }
    call.__name__ = call.__qualname__ = str(listed["name"])
    call.__doc__ = listed.get("description") or ""
    return call


def run(agent: Any, instruction: str, variables: Mapping[str, str]) -> None:
    """Run ``agent`` on ``instruction``; its outcome to the file ``REPLAY_ANSWER`` names."""
    outcome: dict[str, Any]
    try:
        if isinstance(agent, str):
            agent = load_callable(agent)
        answer = agent(instruction, environment(variables))
        if inspect.isawaitable(answer):
            answer = asyncio.run(_awaited(answer))
        outcome = {"answer": answer}
    except BaseException as exc:  # the agent's failure, told to the harness as it was
        cls = type(exc)
        outcome = {
            "error": {
                "type": f"{cls.__module__}.{cls.__qualname__}",
                "message": str(exc),
                "traceback": traceback.format_exc(),
            }
        }
    with open(variables["REPLAY_ANSWER"], "w", encoding="utf-8") as out:
        json.dump(outcome, out, default=str)


def main(argv: list[str]) -> int:
    """Run the agent ``argv[0]`` on stdin's instruction (``--serve SOCKET MOD:FN``: many)."""
    if argv[:1] == ["--serve"]:
        from ._zygote import serve

        sys.path[:0] = argv[3:]  # the harness's import path
        return serve(argv[1], argv[2])
    run(argv[0], sys.stdin.read(), os.environ)
    return 0


async def _awaited(answer: Any) -> Any:
    return await answer


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
