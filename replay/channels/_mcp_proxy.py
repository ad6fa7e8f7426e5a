"""A recording proxy in front of a third-party MCP server, started by command or reached by URL.

The agent talks to the proxy (``env.mcp_servers[name].url`` / ``.command``:
the same MCP server as the trial's own, ``_mcp``); the proxy answers
``tools/list`` and ``tools/call`` through recorded tools:

- live (sandbox, record): the real server is started for the trial (or
  reached at its URL); ``tools/list`` is a recorded call named
  ``mcp:<server>:tools/list`` (its answer: the tools' wire form), and each
  ``tools/call`` is forwarded and recorded as a tool event under the tool's
  own name. A server that takes a world gets the trial's fresh world as a
  SQLite file (``{world}`` in its command or environment); the rows a call
  changed there are found by comparing the file's tables before and after the
  call (a server writes through its own connection, which no trigger of ours
  sees) and applied to the trial's world inside the call, so the tool event
  carries them as its delta and the graders see them.
- offline: nothing is started; ``tools/list`` and every call are answered
  from the cassette, the recorded deltas applied; an unseen call is the usual
  "fixture unsupported" MCP tool error.

Resources, prompts and progress notifications are not relayed (the world
server's clients ask for tools only).
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import contextlib
import json
import sqlite3
import tempfile
import threading
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

from recorder import ConfigError, RowChange, Tool, WorldDelta, tool

from ._mcp import McpTools

CALL_TIMEOUT_S = 60.0
"""Seconds one call to the real server may take before it is a tool error."""
STARTUP_S = 30.0
"""Seconds the real server may take to start and answer ``initialize``."""


@dataclass(frozen=True)
class McpServer:
    """A third-party MCP server a case's agent uses.

    Attributes:
        command: The command that starts it (stdio); ``{world}`` in it is replaced
            by the path of the trial's world as a SQLite file.
        url: Or the streamable-HTTP endpoint where it runs already.
        env: Environment variables for the command (``{world}`` replaced too).
    """

    command: Sequence[str] = ()
    url: str | None = None
    env: Mapping[str, str] = field(default_factory=dict)

    def __post_init__(self) -> None:
        if bool(self.command) == bool(self.url):
            raise ConfigError("an MCP server is a command or a url (one of them)")

    @property
    def takes_world(self) -> bool:
        """Whether the server is given the trial's world as a file."""
        return any("{world}" in part for part in (*self.command, *self.env.values()))


def list_name(server: str) -> str:
    """The recorded call that holds a server's ``tools/list``."""
    return f"mcp:{server}:tools/list"


class LiveServer:
    """The real server, its client session on a loop of its own, for one trial."""

    def __init__(self, name: str, spec: McpServer, world: Any) -> None:
        self.name, self.spec, self.world = name, spec, world
        self._loop = asyncio.new_event_loop()
        self._thread = threading.Thread(target=self._loop.run_forever, daemon=True)
        self._serving: concurrent.futures.Future[None] | None = None
        self._stop: asyncio.Event = asyncio.Event()
        self._session: Any = None
        self._dir = tempfile.TemporaryDirectory(prefix="replay-mcp-")
        self.file = Path(self._dir.name) / "world.db"
        self._file: sqlite3.Connection | None = None

    def start(self) -> None:
        """Start the server (its world file first) and open the session.

        Raises:
            ConfigError: It did not start, or did not answer ``initialize``.
        """
        if self.spec.takes_world:
            copy = sqlite3.connect(self.file)
            try:
                self.world.conn.backup(copy)
            finally:
                copy.close()
            self._file = sqlite3.connect(self.file, check_same_thread=False)
        self._thread.start()
        ready: concurrent.futures.Future[None] = concurrent.futures.Future()
        self._stop = asyncio.Event()
        self._serving = asyncio.run_coroutine_threadsafe(self._serve(ready), self._loop)
        try:
            ready.result(timeout=STARTUP_S)
        except Exception as exc:
            self.close()
            where = " ".join(self.spec.command) or self.spec.url
            raise ConfigError(
                f"MCP server {self.name!r} ({where}) did not start: {type(exc).__name__}: {exc}"
            ) from None

    async def _serve(self, ready: concurrent.futures.Future[None]) -> None:
        """Hold the client session, in this one task, until ``close``."""
        from mcp import ClientSession

        try:
            async with self._transport() as streams, ClientSession(*streams[:2]) as session:
                await session.initialize()
                self._session = session
                ready.set_result(None)
                await self._stop.wait()
        except BaseException as exc:
            if not ready.done():
                ready.set_exception(exc)
            raise

    def _transport(self) -> Any:
        if self.spec.command:
            from mcp.client.stdio import StdioServerParameters, stdio_client

            command, *args = [self._filled(p) for p in self.spec.command]
            env = {k: self._filled(v) for k, v in self.spec.env.items()} or None
            return stdio_client(StdioServerParameters(command=command, args=args, env=env))
        from mcp.client.streamable_http import streamable_http_client

        return streamable_http_client(str(self.spec.url))

    def _filled(self, text: str) -> str:
        return text.replace("{world}", str(self.file))

    def _run(self, coroutine: Any, timeout: float = CALL_TIMEOUT_S) -> Any:
        return asyncio.run_coroutine_threadsafe(coroutine, self._loop).result(timeout)

    def tools(self) -> list[dict[str, Any]]:
        """The server's tools, in wire form."""
        listed = self._run(self._session.list_tools())
        return [t.model_dump(mode="json", by_alias=True, exclude_none=True) for t in listed.tools]

    def call(self, name: str, arguments: Mapping[str, Any]) -> str:
        """Call ``name``; the rows it changed in the server's file are applied to the world.

        Raises:
            ServerToolError: The server answered with a tool error.
        """
        before = _tables(self._file) if self._file is not None else None
        result = self._run(self._session.call_tool(name, dict(arguments)))
        if before is not None and self._file is not None:
            after = _tables(self._file)
            for table in after.keys() - before.keys():  # a table the call created
                sql = self._file.execute(
                    "SELECT sql FROM sqlite_master WHERE type = 'table' AND name = ?", (table,)
                ).fetchone()[0]
                self.world.conn.execute(sql)
            delta = _delta(before, after)
            if delta:
                self.world.apply(delta)
        text = "\n".join(getattr(c, "text", "") for c in result.content)
        if getattr(result, "isError", None) or getattr(result, "is_error", None):
            raise ServerToolError(text)
        return text

    def close(self) -> None:
        """Stop the server and its loop; remove its world file (once)."""
        if self._loop.is_closed():
            return
        if self._serving is not None:
            self._loop.call_soon_threadsafe(self._stop.set)
            with contextlib.suppress(Exception):  # a server that died already
                self._serving.result(timeout=10)
        if self._thread.is_alive():
            self._loop.call_soon_threadsafe(self._loop.stop)
            self._thread.join(timeout=5)
        if not self._thread.is_alive():
            self._loop.close()
        if self._file is not None:
            self._file.close()
        self._dir.cleanup()


class ServerToolError(Exception):
    """The third-party server answered a call with a tool error (its text)."""


def _tables(conn: sqlite3.Connection) -> dict[str, tuple[list[str], dict[Any, dict[str, Any]]]]:
    """Every table of ``conn``: its key columns and its rows by key."""
    out = {}
    names = conn.execute(
        "SELECT name FROM sqlite_master WHERE type = 'table' AND name NOT LIKE 'sqlite_%'"
    ).fetchall()
    for (table,) in names:
        info = conn.execute(f'PRAGMA table_info("{table}")').fetchall()
        pk = [row[1] for row in sorted(info, key=lambda r: r[5]) if row[5]] or ["rowid"]
        cols = [row[1] for row in info]
        keys = ", ".join("rowid" if c == "rowid" else f'"{c}"' for c in pk)
        select = ", ".join(f'"{c}"' for c in cols)
        rows = {}
        for values in conn.execute(f'SELECT {keys}, {select} FROM "{table}"'):
            rows[tuple(values[: len(pk)])] = dict(zip(cols, values[len(pk) :], strict=True))
        out[table] = (pk, rows)
    return out


def _delta(before: Any, after: Any) -> WorldDelta:
    """The rows that changed between two ``_tables`` reads, as a recorded delta."""
    delta: WorldDelta = {}
    for table, (pk, rows) in after.items():
        old = before.get(table, (pk, {}))[1]
        changes = []
        for key, row in rows.items():
            was = old.get(key)
            if was is None:
                changes.append(RowChange(key=list(key), after=row))
            elif was != row:
                changed = [c for c in row if row[c] != was.get(c)]
                changes.append(
                    RowChange(
                        key=list(key),
                        before={c: was.get(c) for c in changed},
                        after={c: row[c] for c in changed},
                    )
                )
        changes += [RowChange(key=list(k), before=v) for k, v in old.items() if k not in rows]
        if changes:
            delta[table] = changes
    return delta


class McpProxy(McpTools):
    """``env.mcp_servers[name]``: the trial's MCP proxy for one third-party server.

    Built on first use of ``url``: ``prepare()`` returns the server's tools (wire
    form) and the dispatcher that answers them (forwarding and recording, or
    answering from the cassette).
    """

    def __init__(
        self,
        prepare: Callable[[], tuple[list[dict[str, Any]], Callable[[str, Mapping[str, Any]], Any]]],
        closing: Callable[[], None] = lambda: None,
        upstream: str | None = None,
    ) -> None:
        super().__init__([], lambda name, arguments: None)
        self._prepare, self._closing, self._upstream = prepare, closing, upstream
        self._wire: list[dict[str, Any]] = []

    def _start(self, context: Any) -> str:
        if self._upstream is not None and self.recording is not None:
            where = urlsplit(self._upstream)  # the harness's own traffic to the real server
            self.recording.channel(f"{where.hostname}:{where.port or 80}")
        self._wire, self._call_tool = context.run(self._prepare)
        return super()._start(context)

    def _listed(self) -> list[dict[str, Any]]:
        return self._wire

    def close(self) -> None:
        """Stop the proxy, then the real server (if one was started)."""
        super().close()
        self._closing()


def live_proxy(
    name: str,
    spec: McpServer,
    world: Any,
    wrap: Callable[[Callable[[str, Mapping[str, Any]], Any]], Any],
) -> McpProxy:
    """The proxy of a trial that starts (or reaches) the real server: every call recorded."""
    live = LiveServer(name, spec, world)

    def prepare() -> tuple[list[dict[str, Any]], Callable[[str, Mapping[str, Any]], Any]]:
        live.start()
        listing = tool(live.tools, name=list_name(name), parameters={"type": "object"})
        wire = listing()  # recorded: offline answers tools/list from it
        tools = {t["name"]: _forwarding(live, t) for t in wire}
        return wire, wrap(lambda tool_name, arguments: tools[tool_name](**arguments))

    return McpProxy(prepare, live.close, spec.url)


def _forwarding(live: LiveServer, spec: Mapping[str, Any]) -> Tool[..., Any]:
    name = spec["name"]

    def forward(**arguments: Any) -> Any:
        return live.call(name, arguments)

    read_only = bool((spec.get("annotations") or {}).get("readOnlyHint"))
    return tool(
        forward,
        name=name,
        description=spec.get("description") or name,
        writes=not read_only,
        parameters=spec.get("inputSchema") or {"type": "object"},
    )


def replayed_proxy(
    name: str,
    replayed: Callable[[Tool[..., Any]], Callable[..., Any]],
    wrap: Callable[[Callable[[str, Mapping[str, Any]], Any]], Any],
) -> McpProxy:
    """The offline proxy: ``tools/list`` and every call answered from the cassette.

    ``replayed(original)`` is the offline mode's answer for a tool (its recorded
    delta applied); the real server is never started.
    """

    def prepare() -> tuple[list[dict[str, Any]], Callable[[str, Mapping[str, Any]], Any]]:
        listing = replayed(tool(_unstarted, name=list_name(name), parameters={"type": "object"}))
        answer = listing()
        wire = json.loads(answer) if isinstance(answer, str) else list(answer)
        tools = {
            t["name"]: replayed(
                tool(_unstarted, name=t["name"], parameters=t.get("inputSchema") or {})
            )
            for t in wire
        }
        return wire, wrap(lambda tool_name, arguments: tools[tool_name](**arguments))

    return McpProxy(prepare)


def _unstarted(**arguments: Any) -> Any:
    raise AssertionError("offline never runs a third-party server's tool")  # pragma: no cover
