"""A trial's tools served over MCP (streamable HTTP), with the official ``mcp`` SDK.

``env.mcp.url`` starts, on first use, an MCP server on 127.0.0.1 for the
trial's tools alone (``env.mcp.command``: the same over stdio, for agents that
start their MCP servers as commands): ``tools/list`` gives their schemas; ``tools/call`` goes
through the trial's own dispatcher (``env.call_tool``: faults injected, the
call recorded as a tool event with its world delta; offline, answered from
the cassette), in the trial's context, so an MCP call is the same tool event
as a direct one. A tool that raises is an MCP tool error whose text is the
exception (offline: the "fixture unsupported: ...; nearest recorded: ..."
message; the trial is then ``unsupported``). The server's own traffic is a
channel of the trial's recording: it goes out unrecorded, in every mode.

The server lives as long as the trial: its agent's recording closes it.
"""

from __future__ import annotations

import asyncio
import contextlib
import contextvars
import functools
import importlib.metadata
import importlib.util
import inspect
import json
import socket
import sys
import threading
import time
from collections.abc import AsyncIterator, Awaitable, Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

from recorder import ConfigError, Recording

STARTUP_S = 10.0
"""Seconds the server may take to listen before the trial is an error."""


def sdk_missing() -> str | None:
    """Why the trial's tools cannot be served over MCP here (the mcp extra), else None."""
    for module in ("mcp", "uvicorn"):
        if importlib.util.find_spec(module) is None:
            return f"No module named {module!r}"
    return None


class McpTools:
    """The trial's MCP tool server, started on first use of ``url``.

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
        """The trial's recording, told of the server's address (a channel of the trial)."""
        self._lock = threading.Lock()
        self._url: str | None = None
        self._server: Any = None
        self._thread: threading.Thread | None = None

    @property
    def url(self) -> str:
        """The server's streamable-HTTP endpoint (``http://127.0.0.1:PORT/mcp``)."""
        with self._lock:
            if self._url is None:
                self._url = self._start(contextvars.copy_context())
            return self._url

    @property
    def command(self) -> list[str]:
        """The same server as a command speaking MCP over stdio (``MCPServerStdio``).

        It relays to ``url`` (``_stdio.py``): the tools run here, in the trial.
        """
        return [sys.executable, "-I", "-S", str(Path(__file__).with_name("_stdio.py")), self.url]

    def close(self) -> None:
        """Stop the server, if it started; it winds down in its own thread.

        uvicorn looks at ``should_exit`` every 0.1 s: a trial need not wait for that.
        """
        if self._server is not None:
            self._server.should_exit = True

    def _start(self, context: contextvars.Context) -> str:
        try:
            import uvicorn
        except ImportError as exc:
            raise ConfigError(
                f"env.mcp needs the mcp SDK ({exc}): pip install 'agent-replay[mcp]'"
            ) from None
        listed = self._listed()

        async def call(name: str, arguments: dict[str, Any]) -> dict[str, Any]:
            error, text = await asyncio.to_thread(context.copy().run, self._call, name, arguments)
            return {"content": [{"type": "text", "text": text}], "isError": error}

        app = _app(listed, call)
        sock = socket.socket()
        # Small JSON answers on a kept-alive connection: without this, delayed ACKs cost
        # ~40 ms a call (accepted connections inherit it on Linux).
        sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
        if self.recording is not None:
            self.recording.channel(f"127.0.0.1:{port}")
        self._server = uvicorn.Server(
            uvicorn.Config(app, log_level="warning", lifespan="on", log_config=_log_config())
        )
        self._thread = threading.Thread(
            target=self._server.run, kwargs={"sockets": [sock]}, name="replay-mcp", daemon=True
        )
        self._thread.start()
        deadline = time.monotonic() + STARTUP_S
        while not self._server.started:
            if not self._thread.is_alive() or time.monotonic() > deadline:
                raise ConfigError(f"the trial's MCP tool server did not start on port {port}")
            time.sleep(0.001)  # (it starts in a few milliseconds: every trial waits for it)
        return f"http://127.0.0.1:{port}/mcp"

    def _listed(self) -> list[dict[str, Any]]:
        """The tools as ``tools/list`` gives them (wire form)."""
        return [
            {
                "name": spec["function"]["name"],
                "description": spec["function"].get("description") or None,
                "inputSchema": spec["function"].get("parameters") or {"type": "object"},
            }
            for spec in self._tools
        ]

    def _call(self, name: str, arguments: dict[str, Any]) -> tuple[bool, str]:
        """Run one call in the trial's context: (is it an error, the text to answer)."""
        try:
            result = self._call_tool(name, arguments)
            if inspect.isawaitable(result):
                result = asyncio.run(_awaited(result))
        except Exception as exc:
            return True, f"{type(exc).__name__}: {exc}"
        return False, result if isinstance(result, str) else json.dumps(result, default=str)


async def _awaited(result: Any) -> Any:
    return await result


Call = Callable[[str, dict[str, Any]], Awaitable[dict[str, Any]]]
"""A ``tools/call``: the tool's name and arguments to its ``CallToolResult`` (wire form)."""


def _app(tools: list[dict[str, Any]], call: Call) -> Any:
    """The ASGI app serving ``tools`` at ``/mcp``: stateless streamable HTTP, JSON answers.

    For the ``mcp`` SDK installed: 2.x (``mcp_types``, handlers given to the
    ``Server``) or 1.x (handlers registered by decorator), so that the server
    runs beside whichever MCP client the agent's framework brought.
    """
    return _app_2(tools, call) if _mcp_major() >= 2 else _app_1(tools, call)


@functools.cache
def _mcp_major() -> int:
    """The installed ``mcp`` SDK's major version (read once: 3 ms a look-up, every trial)."""
    return int(importlib.metadata.version("mcp").partition(".")[0])


_logging_configured = threading.Event()


def _log_config() -> dict[str, Any] | None:
    """The logging configuration uvicorn is given: for the first server of a process only.

    ``dictConfig`` on every trial's server cost 1.5 ms and changed nothing after the
    first: the loggers it configures are the process's.
    """
    if _logging_configured.is_set():
        return None
    from uvicorn.config import LOGGING_CONFIG

    _logging_configured.set()
    config: dict[str, Any] = LOGGING_CONFIG
    return config


def _app_2(tools: list[dict[str, Any]], call: Call) -> Any:
    import mcp_types as types  # type: ignore[import-not-found,unused-ignore]
    from mcp.server import Server

    listed = [types.Tool.model_validate(t) for t in tools]

    async def list_tools(ctx: Any, params: Any) -> Any:
        return types.ListToolsResult(tools=listed)

    async def call_tool(ctx: Any, params: Any) -> Any:
        answer = await call(params.name, dict(params.arguments or {}))
        return types.CallToolResult.model_validate(answer)

    make: Any = Server  # (typed against whichever SDK line is installed)
    server = make("agent-replay world", on_list_tools=list_tools, on_call_tool=call_tool)
    return server.streamable_http_app(stateless_http=True, json_response=True)


def _app_1(tools: list[dict[str, Any]], call: Call) -> Any:
    import mcp.types as types
    from mcp.server.lowlevel import Server
    from mcp.server.streamable_http_manager import StreamableHTTPSessionManager
    from starlette.applications import Starlette
    from starlette.routing import Route

    listed = [types.Tool.model_validate(t) for t in tools]
    server: Any = Server("agent-replay world")

    @server.list_tools()  # type: ignore[untyped-decorator]
    async def list_tools() -> list[Any]:
        return listed

    # Arguments go to the tool as given, as a direct call's do: its own errors say what is wrong.
    @server.call_tool(validate_input=False)  # type: ignore[untyped-decorator]
    async def call_tool(name: str, arguments: dict[str, Any]) -> Any:
        return types.CallToolResult.model_validate(await call(name, arguments))

    manager = StreamableHTTPSessionManager(app=server, json_response=True, stateless=True)

    class Endpoint:
        async def __call__(self, scope: Any, receive: Any, send: Any) -> None:
            await manager.handle_request(scope, receive, send)

    @contextlib.asynccontextmanager
    async def lifespan(app: Any) -> AsyncIterator[None]:
        async with manager.run():
            yield

    return Starlette(routes=[Route("/mcp", endpoint=Endpoint())], lifespan=lifespan)
