"""An MCP endpoint for one trial: JSON-RPC messages to a handler, over two transports.

- ``tcp``: newline-delimited JSON-RPC on a kept-open connection, MCP's stdio
  framing; the relay ``_stdio.py tcp://...`` pipes an agent's
  stdio to it (``.command``), and notifications flow back during a call.
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
import socket
import socketserver
import threading
from collections.abc import Callable
from typing import Any

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
        self._servers: dict[str, socketserver.TCPServer] = {}

    @property
    def tcp(self) -> str:
        """``tcp://127.0.0.1:PORT``: newline-delimited JSON-RPC."""
        return f"tcp://127.0.0.1:{self._port('tcp', _LinesHandler)}"

    @property
    def http(self) -> str:
        """``http://127.0.0.1:PORT/mcp``: streamable HTTP."""
        return f"http://127.0.0.1:{self._port('http', _HttpHandler)}/mcp"

    def handle(self, message: Message, notify: Notify) -> Message | None:
        """Run the handler in (a copy of) the trial's context; a bug in it is an error answer."""
        try:
            return self._context.copy().run(self._handle, message, notify)
        except Exception as exc:  # the handler's own failure, never the agent's hang
            return error(message.get("id"), -32603, f"{type(exc).__name__}: {exc}")

    def submit(self, message: Message, notify: Notify) -> concurrent.futures.Future[Any]:
        """``handle`` in the pool."""
        return self._pool.submit(self.handle, message, notify)

    def close(self) -> None:
        """Stop listening; calls under way finish."""
        with self._lock:
            servers, self._servers = list(self._servers.values()), {}
        for server in servers:
            server.shutdown()
            server.server_close()
        self._pool.shutdown(wait=False, cancel_futures=True)

    def _port(self, kind: str, handler: type[socketserver.BaseRequestHandler]) -> int:
        with self._lock:
            server = self._servers.get(kind)
            if server is None:
                server = _Server(("127.0.0.1", 0), handler)
                server.endpoint = self
                threading.Thread(
                    target=server.serve_forever,
                    kwargs={"poll_interval": 0.05},
                    name=f"replay-mcp-{kind}",
                    daemon=True,
                ).start()
                self._servers[kind] = server
            return int(server.server_address[1])


class _Server(socketserver.ThreadingTCPServer):
    daemon_threads = True
    allow_reuse_address = True
    endpoint: Endpoint

    def server_bind(self) -> None:
        # Small answers on a kept-open connection: without this, delayed ACKs cost
        # ~40 ms a call (accepted connections inherit it on Linux).
        self.socket.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        super().server_bind()


class _LinesHandler(socketserver.StreamRequestHandler):
    """One agent connection: a message a line each way; requests run concurrently."""

    server: _Server

    def handle(self) -> None:
        endpoint, lock = self.server.endpoint, threading.Lock()
        running: list[concurrent.futures.Future[Any]] = []

        def send(message: Message | None) -> None:
            if message is not None:
                with lock:
                    self.wfile.write(_encode(message) + b"\n")
                    self.wfile.flush()

        for line in self.rfile:
            if not line.strip():
                continue
            try:
                message = json.loads(line)
            except ValueError:
                send(error(None, -32700, "the message is not JSON"))
                continue
            if not isinstance(message, dict):
                send(error(None, -32600, "a message is a JSON object (batches are not supported)"))
                continue
            future = endpoint.submit(message, send)
            future.add_done_callback(lambda done: send(done.result()))
            running = [f for f in running if not f.done()] + [future]
        concurrent.futures.wait(running)


class _HttpHandler(http.server.BaseHTTPRequestHandler):
    """Streamable HTTP, stateless: no session id, no server-initiated stream."""

    server: _Server
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
