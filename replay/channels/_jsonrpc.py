"""An MCP endpoint for one trial: JSON-RPC messages to a handler, over two transports.

- ``stdio``: a Unix socket to which the relay (``_stdio.py unix:PATH``, the
  agent's ``.command``) hands its own stdin and stdout (``SCM_RIGHTS``): the
  endpoint then reads and writes the agent's pipes itself, newline-delimited
  JSON-RPC, so no process stands between the agent and the proxy, and
  notifications flow back during a call.
- ``http``: MCP's streamable HTTP, stateless: a POSTed request is answered
  with JSON, or with an event stream when the handler sends notifications
  (progress) before its answer; a notification is accepted (202).

Both run the handler in a thread of a pool, in the trial's context, so a slow
call holds neither the next one nor the agent's other connection. No MCP SDK
is in the loop: the SDK's stateless server costs ~1.5 ms a request on this
machine, more than the whole budget of the recording proxy (under 1 ms); the
messages are the protocol's own, checked against the SDK's clients in the tests.
"""

from __future__ import annotations

import concurrent.futures
import contextvars
import http.server
import json
import os
import shutil
import socket
import socketserver
import tempfile
import threading
from collections.abc import Callable
from typing import Any, BinaryIO

Message = dict[str, Any]
Notify = Callable[[Message], None]
Handler = Callable[[Message, Notify], Message | None]
"""``handle(message, notify)``: the answer to a request (None for a notification);
``notify(message)`` sends the client a notification while it runs."""


def error(ident: Any, code: int, message: str) -> Message:
    """A JSON-RPC error answer."""
    return {"jsonrpc": "2.0", "id": ident, "error": {"code": code, "message": message}}


def _encode(message: Message) -> bytes:
    return json.dumps(message, separators=(",", ":"), default=str).encode()


class Endpoint:
    """The trial's endpoint for one handler; each transport starts on first use."""

    def __init__(self, handle: Handler, context: contextvars.Context) -> None:
        self._handle, self._context = handle, context
        self._pool = concurrent.futures.ThreadPoolExecutor(32, thread_name_prefix="replay-mcp")
        self._lock = threading.Lock()
        self._servers: dict[str, socketserver.BaseServer] = {}
        self._dir: str | None = None

    @property
    def stdio(self) -> str:
        """``unix:PATH``: where the relay hands over the agent's stdio."""
        with self._lock:
            if "stdio" not in self._servers:
                self._dir = tempfile.mkdtemp(prefix="replay-mcp-")
                server = _UnixServer(os.path.join(self._dir, "mcp"), _HandOver)
                self._serve("stdio", server)
            return f"unix:{os.path.join(str(self._dir), 'mcp')}"

    @property
    def http(self) -> str:
        """``http://127.0.0.1:PORT/mcp``: streamable HTTP."""
        with self._lock:
            if "http" not in self._servers:
                self._serve("http", _TcpServer(("127.0.0.1", 0), _HttpHandler))
            address: Any = self._servers["http"].server_address
            return f"http://127.0.0.1:{address[1]}/mcp"

    def handle(self, message: Message, notify: Notify) -> Message | None:
        """Run the handler in (a copy of) the trial's context; a bug in it is an error answer."""
        try:
            return self._context.copy().run(self._handle, message, notify)
        except Exception as exc:  # the handler's own failure, never the agent's hang
            return error(message.get("id"), -32603, f"{type(exc).__name__}: {exc}")

    @property
    def pool(self) -> concurrent.futures.ThreadPoolExecutor:
        """The threads that read and answer the agent's messages."""
        return self._pool

    def close(self) -> None:
        """Stop listening; calls under way finish."""
        with self._lock:
            servers, self._servers = list(self._servers.values()), {}
        for server in servers:
            server.shutdown()
            server.server_close()
        self._pool.shutdown(wait=False, cancel_futures=True)
        if self._dir is not None:
            shutil.rmtree(self._dir, ignore_errors=True)

    def _serve(self, kind: str, server: Any) -> None:
        server.endpoint = self
        threading.Thread(
            target=server.serve_forever,
            kwargs={"poll_interval": 0.05},
            name=f"replay-mcp-{kind}",
            daemon=True,
        ).start()
        self._servers[kind] = server


class _TcpServer(socketserver.ThreadingTCPServer):
    daemon_threads = True
    allow_reuse_address = True
    endpoint: Endpoint

    def server_bind(self) -> None:
        # Small answers on a kept-open connection: without this, delayed ACKs cost
        # ~40 ms a call (accepted connections inherit it on Linux).
        self.socket.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        super().server_bind()


class _UnixServer(socketserver.ThreadingUnixStreamServer):
    daemon_threads = True
    endpoint: Endpoint


class _HandOver(socketserver.BaseRequestHandler):
    """A relay hands over its stdin and stdout; the session ends when the agent closes stdin."""

    server: _UnixServer

    def handle(self) -> None:
        try:
            _, fds, _, _ = socket.recv_fds(self.request, 16, 2)
        except OSError:
            return
        if len(fds) != 2:
            for fd in fds:
                os.close(fd)
            return
        with os.fdopen(fds[0], "rb") as given, os.fdopen(fds[1], "wb") as taken:
            _Lines(self.server.endpoint, given, taken).serve()
        # Returning closes the relay's socket: the relay exits, and the agent sees its server end.


class _Lines:
    """One agent session over stdio: a message a line each way; requests run concurrently.

    Leader and followers: the thread that reads a request hands the reading on
    to a thread of the pool, then answers the request itself, so no hand-off
    lies between a request and its answer.
    """

    def __init__(self, endpoint: Endpoint, given: BinaryIO, taken: BinaryIO) -> None:
        self._endpoint, self._in, self._out = endpoint, given, taken
        self._write = threading.Lock()
        self._busy = threading.Condition()
        self._working = 0

    def serve(self) -> None:
        """Answer the session's requests until the agent closes its end, and they are done."""
        with self._busy:
            self._working += 1
        self._follow()
        with self._busy:
            self._busy.wait_for(lambda: self._working == 0)

    def _send(self, message: Message | None) -> None:
        if message is not None:
            with self._write:
                self._out.write(_encode(message) + b"\n")
                self._out.flush()

    def _follow(self) -> None:
        """Read the next request, hand the reading on, answer the request."""
        try:
            while line := self._in.readline():
                try:
                    message = json.loads(line) if line.strip() else None
                except ValueError:
                    self._send(error(None, -32700, "the message is not JSON"))
                    continue
                if message is None:
                    continue
                if not isinstance(message, dict):
                    self._send(error(None, -32600, "a message is a JSON object (no batches)"))
                    continue
                with self._busy:
                    self._working += 1
                self._endpoint.pool.submit(self._follow)
                self._send(self._endpoint.handle(message, self._send))
                return
        except (OSError, ValueError):
            pass  # the agent went away: nobody to answer
        finally:
            with self._busy:
                self._working -= 1
                self._busy.notify_all()


class _HttpHandler(http.server.BaseHTTPRequestHandler):
    """Streamable HTTP, stateless: no session id, no server-initiated stream."""

    server: _TcpServer
    protocol_version = "HTTP/1.1"

    def do_POST(self) -> None:
        body = self.rfile.read(int(self.headers.get("Content-Length") or 0))
        try:
            message = json.loads(body)
        except ValueError:
            return self._json(400, error(None, -32700, "the message is not JSON"))
        if not isinstance(message, dict):
            return self._json(400, error(None, -32600, "a message is a JSON object"))
        if "method" not in message or "id" not in message:  # a notification, or an answer
            if "method" in message:
                self.server.endpoint.handle(message, _ignored)
            return self._empty(202)
        streaming: list[bool] = []

        def notify(note: Message) -> None:
            if not streaming:
                streaming.append(True)
                self.send_response(200)
                self.send_header("Content-Type", "text/event-stream")
                self.send_header("Cache-Control", "no-cache")
                self.send_header("Connection", "close")
                self.end_headers()
            self.wfile.write(b"event: message\ndata: " + _encode(note) + b"\n\n")
            self.wfile.flush()

        answer = self.server.endpoint.handle(message, notify)
        answer = answer or error(message.get("id"), -32603, "no answer")
        if streaming:
            notify(answer)
            self.close_connection = True
        else:
            self._json(200, answer)

    def do_GET(self) -> None:
        self._empty(405)  # no stream of the server's own messages: a stateless endpoint

    def do_DELETE(self) -> None:
        self._empty(200)

    def _json(self, status: int, message: Message) -> None:
        data = _encode(message)
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def _empty(self, status: int) -> None:
        self.send_response(status)
        self.send_header("Content-Length", "0")
        self.end_headers()

    def log_message(self, format: str, *args: Any) -> None:
        pass


def _ignored(message: Message) -> None:
    pass
