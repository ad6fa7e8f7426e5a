"""A recording proxy in front of a third-party MCP server, started by command or reached by URL.

The agent talks to the proxy (``env.mcp_servers[name].url``, streamable HTTP,
or ``.command``, stdio); each request it makes is a recorded call of the
trial, made through the trial's dispatcher (faults injected):

- ``tools/call`` is recorded under the tool's own name with its arguments;
  its result is the server's result as MCP gives it (content, structured
  content), the progress the server reported on the way kept with it, in
  order (``_meta["agent-replay/progress"]``); a result flagged ``isError`` is
  the call's error.
- every other request (``initialize``, ``tools/list``, ``resources/list``,
  ``resources/read``, ``prompts/list``, ``prompts/get``, ...) is a call named
  ``mcp:<server>:<method>`` with its parameters as arguments (``initialize``
  with none: it is asked once per trial, whatever client asks).

Live (sandbox, record): the real server is started on the trial's first
request (or reached at its URL). A server that takes a world gets the trial's
fresh world as a SQLite file (``{world}`` in its command or environment); the
rows a request changed there (``_file_changes.FileChanges``) are applied to the
trial's world inside the call, so the call carries them as its delta and the
graders see them. Offline: nothing is started; every request is answered from
the cassette (progress replayed to an agent that asked for it), the recorded
deltas applied; an unseen call is the usual "fixture unsupported" tool error.

A server that fails (does not start, exits, garbles, hangs) answers the call
under way and every later one with a JSON-RPC error naming it; the call is
recorded with that error (``McpServerFailed``) and the trial is an ``error``
whose cause is the server. Not relayed: the agent's notifications (the proxy
holds its own session with the server) and the server's requests to the
client (sampling, roots, elicitation: the server is told the client has none).
"""

from __future__ import annotations

import contextvars
import json
import os
import sqlite3
import sys
import tempfile
import threading
from collections.abc import Callable, Collection, Mapping
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

from recorder import Recording, Tool, tool

from ..surroundings import ReplayedToolError
from ._file_changes import FileChanges
from ._jsonrpc import Endpoint, Message, Notify, error
from ._process import StdioUpstream
from ._server import McpServer
from ._upstream import HttpUpstream, McpServerFailed, RpcError, ServerWall, Upstream

STARTUP_S = 30.0
"""Seconds the real server may take to start and answer ``initialize``."""
PROGRESS = "agent-replay/progress"
"""Where a recorded ``tools/call`` result keeps the progress reported on the way."""
PROTOCOL = "2025-06-18"
"""The protocol version asked for when the agent names none."""
_RELAY = str(Path(__file__).with_name("_stdio.py"))

Dispatch = Callable[[str, Mapping[str, Any]], Any]


def method_name(server: str, method: str) -> str:
    """The recorded call that holds a request other than ``tools/call``."""
    return f"mcp:{server}:{method}"


_REQUEST: contextvars.ContextVar[tuple[str, Mapping[str, Any], Notify]] = contextvars.ContextVar(
    "mcp_request"
)
"""The agent's request under way in this thread (method, params, notify), for the forwarder."""


class McpProxy:
    """``env.mcp_servers[name]``: the trial's proxy for one third-party server.

    Args:
        name: The server's name for the trial.
        make: The recorded call for a name (a tool's, or ``method_name``'s).
        wrap: The trial's faults around the dispatcher.
        replays: Offline: progress is replayed from the recorded results.
        closing: Stops the real server, if one was started.
        upstream: The real server's URL (its traffic is a channel of the trial).
    """

    def __init__(
        self,
        name: str,
        make: Callable[[str], Callable[..., Any]],
        wrap: Callable[[Dispatch], Dispatch],
        *,
        replays: bool,
        closing: Callable[[], None] = lambda: None,
        upstream: str | None = None,
    ) -> None:
        self.name, self._make, self._replays = name, make, replays
        self._closing, self._upstream = closing, upstream
        self.recording: Recording | None = None
        """The trial's recording, told of the proxy's and the server's addresses."""
        self._calls: dict[str, Callable[..., Any]] = {}
        self._dispatch = wrap(lambda name, arguments: self._call(name)(**arguments))
        self._lock = threading.Lock()
        self._starting = threading.Lock()
        self._endpoint: Endpoint | None = None
        self._http: str | None = None
        self._initialized: Message | None = None

    @property
    def url(self) -> str:
        """The proxy's streamable-HTTP endpoint (``http://127.0.0.1:PORT/mcp``)."""
        endpoint = self._started()
        with self._lock:
            if self._http is None:
                self._http = endpoint.http
                self._channel(self._http)
            return self._http

    @property
    def command(self) -> list[str]:
        """The proxy as a command speaking MCP over stdio (``MCPServerStdio``).

        A few lines of the standard library that hand their stdin and stdout to
        the proxy and wait: the proxy reads and writes the agent's pipes itself.
        """
        return [sys.executable, "-I", "-S", _RELAY, self._started().stdio]

    def close(self) -> None:
        """Stop the proxy, then the real server (if one was started)."""
        with self._lock:
            endpoint, self._endpoint = self._endpoint, None
        if endpoint is not None:
            endpoint.close()
        self._closing()

    def _started(self) -> Endpoint:
        with self._lock:
            if self._endpoint is None:
                self._endpoint = Endpoint(self._handle, contextvars.copy_context())
                if self._upstream is not None:
                    self._channel(self._upstream)
            return self._endpoint

    def _channel(self, url: str) -> None:
        if self.recording is not None:
            where = urlsplit(url)
            self.recording.channel(f"{where.hostname}:{where.port or 80}")

    def _call(self, name: str) -> Callable[..., Any]:
        call = self._calls.get(name)
        if call is None:
            call = self._calls[name] = self._make(name)
        return call

    def _handle(self, message: Message, notify: Notify) -> Message | None:
        """One message from the agent: its answer (None for a notification)."""
        method, ident = message.get("method"), message.get("id")
        if ident is None or not isinstance(method, str):
            return None  # the agent's notifications: the proxy holds its own session
        given = message.get("params")
        params: Mapping[str, Any] = given if isinstance(given, dict) else {}
        if method == "ping":
            return {"jsonrpc": "2.0", "id": ident, "result": {}}
        try:
            result = self._answer(method, params, notify)
        except Exception as exc:
            fault = _as_rpc(exc)
            if fault is not None:
                return error(ident, fault.code, fault.message)
            if method != "tools/call":
                return error(ident, -32603, _text(exc))
            result = {"content": [{"type": "text", "text": _text(exc)}], "isError": True}
        return {"jsonrpc": "2.0", "id": ident, "result": result}

    def _answer(self, method: str, params: Mapping[str, Any], notify: Notify) -> Any:
        asked = {k: v for k, v in params.items() if k != "_meta"}
        token = _REQUEST.set((method, params, notify))
        try:
            if method == "initialize":
                with self._starting:  # asked once a trial: a second client gets the same answer
                    if self._initialized is None:
                        self._initialized = self._dispatch(method_name(self.name, method), {})
                    return self._initialized
            if method != "tools/call":
                return self._dispatch(method_name(self.name, method), asked)
            result = self._dispatch(str(asked.get("name")), asked.get("arguments") or {})
        finally:
            _REQUEST.reset(token)
        if not isinstance(result, dict) or not isinstance(result.get("content"), list):
            text = result if isinstance(result, str) else json.dumps(result, default=str)
            return {"content": [{"type": "text", "text": text}]}  # e.g. a fault's garbled answer
        meta = dict(result.get("_meta") or {})
        progress = meta.pop(PROGRESS, [])
        wanted = (params.get("_meta") or {}).get("progressToken")
        if self._replays and wanted is not None:
            for step in progress:
                notify(
                    {
                        "jsonrpc": "2.0",
                        "method": "notifications/progress",
                        "params": {"progressToken": wanted, **step},
                    }
                )
        return {k: v for k, v in result.items() if k != "_meta"} | ({"_meta": meta} if meta else {})


def is_type(recorded: str, cls: type[BaseException]) -> bool:
    """Whether a recorded error's type (``module.Name``) is ``cls``, wherever it moves."""
    return recorded.rpartition(".")[2] == cls.__name__


def _as_rpc(exc: Exception) -> RpcError | None:
    """The JSON-RPC error to answer for ``exc``: the server's own, or its failure."""
    if isinstance(exc, ReplayedToolError):
        if is_type(exc.type, RpcError):
            return RpcError.parse(exc.message)
        if is_type(exc.type, McpServerFailed):
            return RpcError(-32603, exc.message)
        return None
    if isinstance(exc, RpcError):
        return exc
    if isinstance(exc, McpServerFailed):
        return RpcError(-32603, str(exc))
    return None


def _text(exc: Exception) -> str:
    """A failed call's text: the server's own words, live and offline alike."""
    if isinstance(exc, ServerToolError):
        return str(exc)
    if isinstance(exc, ReplayedToolError):
        return exc.message if is_type(exc.type, ServerToolError) else str(exc)
    return f"{type(exc).__name__}: {exc}"


class ServerToolError(Exception):
    """The third-party server answered a call with a tool error (its text)."""


class LiveServer:
    """The real server for one trial, its process spawned as the trial is set up.

    (``spawn``: its boot, seconds of imports for some, overlaps the agent's own start
    instead of landing in its first request.) The handshake waits for the agent's first
    request; the world file it takes is the trial's fresh world, copied at the spawn.
    """

    def __init__(
        self, name: str, spec: McpServer, world: Any, wall: ServerWall | None = None
    ) -> None:
        self.name, self.spec, self.world, self.wall = name, spec, world, wall
        self.read_only: dict[str, bool] = {}
        """Tools the server lists as read-only (``readOnlyHint``)."""
        self._lock = threading.Lock()
        self._upstream: Upstream | None = None
        self._failed: str | None = None
        self._initialized: Message = {}
        self._spawned: StdioUpstream | None = None
        self._dir: tempfile.TemporaryDirectory[str] | None = None
        self._changes: FileChanges | None = None

    def forward(self, method: str, params: Mapping[str, Any], notify: Notify) -> Message:
        """Send the agent's request on; apply what it changed in the world file to the world.

        Raises:
            ServerToolError: A ``tools/call`` answered with ``isError``.
            RpcError: The server answered with a JSON-RPC error.
            McpServerFailed: The server failed.
        """
        upstream = self._start(params if method == "initialize" else {})
        if method == "initialize":
            self._apply()
            return self._initialized
        try:
            result, progress = upstream.request(method, params, notify)
        finally:
            self._apply()
        if method == "tools/list":
            for listed in result.get("tools") or []:
                hints = listed.get("annotations") or {}
                self.read_only[str(listed.get("name"))] = bool(hints.get("readOnlyHint"))
        if method == "tools/call" and result.get("isError"):
            raise ServerToolError(
                "\n".join(str(c.get("text", "")) for c in result.get("content") or [])
            )
        if progress and method == "tools/call":
            result = {**result, "_meta": {**(result.get("_meta") or {}), PROGRESS: progress}}
        return result

    def _start(self, asked: Mapping[str, Any]) -> Upstream:
        with self._lock:
            if self._failed is not None:
                raise McpServerFailed(self._failed)
            if self._upstream is None:
                try:
                    self._upstream = self._started(asked)
                except McpServerFailed as exc:
                    self._failed = str(exc)
                    raise
            return self._upstream

    def spawn(self) -> None:
        """Start a command's process now; one that cannot start fails the first request."""
        with self._lock:
            if self.spec.command and self._spawned is None and self._failed is None:
                try:
                    self._spawned = self._process()
                except McpServerFailed as exc:
                    self._failed = str(exc)

    def _process(self) -> StdioUpstream:
        spec = self.spec
        file = self._world_file() if spec.takes_world else ""
        command = [part.replace("{world}", file) for part in spec.command]
        env = {k: v.replace("{world}", file) for k, v in spec.env.items()}
        writable = [os.path.dirname(file)] if file else []
        stdio = StdioUpstream(
            self.name, command, env, spec.timeout, self.wall, writable, spec.max_message_bytes
        )
        stdio.start()
        return stdio

    def _started(self, asked: Mapping[str, Any]) -> Upstream:
        spec = self.spec
        upstream: Upstream
        if spec.command:
            upstream, self._spawned = self._spawned or self._process(), None
        else:
            upstream = HttpUpstream(self.name, str(spec.url), spec.timeout)
        hello = {
            "protocolVersion": asked.get("protocolVersion") or PROTOCOL,
            "capabilities": {},  # the server's own requests are not relayed to the agent
            "clientInfo": asked.get("clientInfo") or {"name": "agent-replay", "version": "1"},
        }
        try:
            self._initialized, _ = upstream.request("initialize", hello, _nowhere, STARTUP_S)
            upstream.initialized(self._initialized)
            upstream.notify("notifications/initialized")
        except (McpServerFailed, RpcError) as exc:
            upstream.close()
            where = " ".join(spec.command) or spec.url
            raise McpServerFailed(
                f"MCP server {self.name!r} ({where}) did not start: {exc}"
                if not str(exc).startswith(f"MCP server {self.name!r}")
                else str(exc)
            ) from None
        return upstream

    def _world_file(self) -> str:
        self._dir = tempfile.TemporaryDirectory(prefix="replay-mcp-")
        path = str(Path(self._dir.name) / "world.db")
        copy = sqlite3.connect(path)
        try:
            self.world.conn.backup(copy)
        finally:
            copy.close()
        self._changes = FileChanges(path)
        return path

    def _apply(self) -> None:
        if self._changes is None:
            return
        created, delta = self._changes.since()
        for sql in created:  # a table the server created
            self.world.conn.execute(sql)
        if delta:
            self.world.apply(delta)

    def close(self) -> None:
        """Stop the server; remove its world file."""
        with self._lock:
            upstream, self._upstream = self._upstream or self._spawned, None
            self._spawned = None
            self._failed = self._failed or f"MCP server {self.name!r}: the trial is over"
        if upstream is not None:
            upstream.fail(self._failed, stop=False)  # a call still waiting is answered now
            upstream.close()
        if self._changes is not None:
            self._changes.close()
        if self._dir is not None:
            self._dir.cleanup()


def _nowhere(message: Message) -> None:
    pass


def live_proxy(
    name: str,
    spec: McpServer,
    world: Any,
    wrap: Callable[[Dispatch], Dispatch],
    wall: ServerWall | None = None,
) -> McpProxy:
    """The proxy of a trial that starts (or reaches) the real server: every request recorded.

    With ``wall``, a started server runs behind it (``replay.agents.server_wall``).
    """
    live = LiveServer(name, spec, world, wall)
    live.spawn()

    def make(call: str) -> Tool[..., Any]:
        def forward(**arguments: Any) -> Any:
            method, params, notify = _REQUEST.get()
            return live.forward(method, params, notify)

        listing = call.startswith(method_name(name, ""))
        writes = call == method_name(name, "initialize") or (
            not listing and not live.read_only.get(call, False)
        )
        return tool(forward, name=call, writes=writes, parameters={"type": "object"})

    return McpProxy(name, make, wrap, replays=False, closing=live.close, upstream=spec.url)


def replayed_proxy(
    name: str,
    replayed: Callable[[Tool[..., Any]], Callable[..., Any]],
    wrap: Callable[[Dispatch], Dispatch],
    writes: Collection[str] = (),
) -> McpProxy:
    """The offline proxy: every request answered from the cassette; nothing is started.

    ``replayed(original)`` is the offline mode's answer for a tool (its recorded
    delta applied); ``writes``: the calls recorded as writes.
    """

    def make(call: str) -> Callable[..., Any]:
        original = tool(_unstarted, name=call, writes=call in writes, parameters={"type": "object"})
        return replayed(original)

    return McpProxy(name, make, wrap, replays=True)


def _unstarted(**arguments: Any) -> Any:
    raise AssertionError("offline never runs a third-party server's tool")  # pragma: no cover
