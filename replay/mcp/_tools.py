"""A trial's tools served over MCP (streamable HTTP, stdio), answered in the trial.

``env.mcp.url`` starts, on first use, an MCP endpoint on 127.0.0.1 for the
trial's tools alone (``env.mcp.command``: the same over stdio, for agents that
start their MCP servers as commands: a relay hands its stdin and stdout to the
endpoint). ``initialize`` names the tools capability, ``tools/list`` gives their
schemas; ``tools/call`` goes through the trial's own dispatcher (``env.call_tool``:
faults injected, the call recorded as a tool event with its world delta; offline,
answered from the cassette), in the trial's context, so an MCP call is the same
tool event as a direct one. A tool that raises is an MCP tool error whose text is
the exception (offline: the "fixture unsupported: ...; nearest recorded: ..."
message; the trial is then ``unsupported``). The endpoint's own traffic is a
channel of the trial's recording: it goes out unrecorded, in every mode.

The messages are MCP's own, framed by ``_jsonrpc`` (as the recording proxy's
are), checked against the official SDK's clients and the frameworks' in the
tests; no MCP SDK runs in the harness. A walled agent's every tool call comes this
way: through the SDK's stateless server (uvicorn, Starlette) one took about 6 ms on
this machine, through this endpoint 1.1-1.5 ms.

The endpoint lives as long as the trial: its agent's recording closes it.
"""

from __future__ import annotations

import asyncio
import contextvars
import inspect
import json
import sys
import threading
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

from recorder import Recording

from ._jsonrpc import Endpoint, Message, Notify, error

PROTOCOLS = ("2024-11-05", "2025-03-26", "2025-06-18", "2025-11-25")
"""The MCP versions an ``initialize`` may ask for and be given: a client asking another
gets the last of these (the client then goes on, or says it cannot)."""
SERVER = "agent-replay world"
"""The endpoint's name in its ``initialize`` answer."""
_RELAY = str(Path(__file__).with_name("_stdio.py"))


class McpTools:
    """The trial's tools over MCP, the endpoint started on first use of ``url`` or ``command``.

    Args:
        tools: The tools' specs in OpenAI ``tools`` format (``env.tools``).
        call_tool: ``call_tool(name, arguments)``, the trial's dispatcher.
    """

    def __init__(
        self,
        tools: Sequence[Mapping[str, Any]],
        call_tool: Callable[[str, Mapping[str, Any]], Any],
    ) -> None:
        self._tools, self._call_tool = tools, call_tool
        self.recording: Recording | None = None
        """The trial's recording, told of the endpoint's address (a channel of the trial)."""
        self._lock = threading.Lock()
        self._endpoint: Endpoint | None = None
        self._url: str | None = None

    @property
    def url(self) -> str:
        """The endpoint's streamable-HTTP address (``http://127.0.0.1:PORT/mcp``)."""
        endpoint = self._started()
        with self._lock:
            if self._url is None:
                self._url = endpoint.http
                if self.recording is not None:
                    where = urlsplit(self._url)
                    self.recording.channel(f"{where.hostname}:{where.port}")
            return self._url

    @property
    def command(self) -> list[str]:
        """The same endpoint as a command speaking MCP over stdio (``MCPServerStdio``).

        A few lines of the standard library (``_stdio.py``) that hand their stdin and
        stdout to the endpoint and wait: the tools run here, in the trial.
        """
        return [sys.executable, "-I", "-S", _RELAY, self._started().stdio]

    def close(self) -> None:
        """Stop the endpoint, if it started (calls under way finish)."""
        with self._lock:
            endpoint, self._endpoint = self._endpoint, None
        if endpoint is not None:
            endpoint.close()

    def _started(self) -> Endpoint:
        """The endpoint, made on first use in the caller's (the trial's) context."""
        with self._lock:
            if self._endpoint is None:
                self._endpoint = Endpoint(self._handle, contextvars.copy_context())
            return self._endpoint

    def _handle(self, message: Message, notify: Notify) -> Message | None:
        """One message from the agent: its answer (None for a notification)."""
        method, ident = message.get("method"), message.get("id")
        if ident is None:
            return None  # notifications (initialized, cancelled): nothing to answer
        given = message.get("params")
        params: Mapping[str, Any] = given if isinstance(given, dict) else {}
        if method == "initialize":
            asked = params.get("protocolVersion")
            return _result(ident, {
                "protocolVersion": asked if asked in PROTOCOLS else PROTOCOLS[-1],
                "capabilities": {"tools": {"listChanged": False}},
                "serverInfo": {"name": SERVER, "version": _version()},
            })  # fmt: skip
        if method == "ping":
            return _result(ident, {})
        if method == "tools/list":
            return _result(ident, {"tools": self._listed()})
        if method == "tools/call":
            name, arguments = params.get("name"), params.get("arguments") or {}
            if not isinstance(name, str) or not isinstance(arguments, dict):
                return error(ident, -32602, "tools/call takes a name and an object of arguments")
            failed, text = self._call(name, arguments)
            return _result(ident, {"content": [{"type": "text", "text": text}], "isError": failed})
        return error(ident, -32601, f"method not found: {method} (this server has tools only)")

    def _listed(self) -> list[dict[str, Any]]:
        """The tools as ``tools/list`` gives them (wire form; an empty description left out)."""
        listed = []
        for spec in self._tools:
            function = spec["function"]
            tool: dict[str, Any] = {"name": function["name"]}
            if function.get("description"):
                tool["description"] = function["description"]
            tool["inputSchema"] = function.get("parameters") or {"type": "object"}
            listed.append(tool)
        return listed

    def _call(self, name: str, arguments: dict[str, Any]) -> tuple[bool, str]:
        """Run one call in the trial's context: (is it an error, the text to answer)."""
        try:
            result = self._call_tool(name, arguments)
            if inspect.isawaitable(result):
                result = asyncio.run(_awaited(result))
        except Exception as exc:
            return True, f"{type(exc).__name__}: {exc}"
        return False, result if isinstance(result, str) else json.dumps(result, default=str)


def _result(ident: Any, result: dict[str, Any]) -> Message:
    return {"jsonrpc": "2.0", "id": ident, "result": result}


def _version() -> str:
    from recorder import __version__

    return __version__


async def _awaited(result: Any) -> Any:
    return await result
