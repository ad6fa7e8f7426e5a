"""An MCP endpoint for one trial: JSON-RPC messages to a handler, over two transports.

- ``stdio``: a Unix socket to which the relay (``_stdio.py unix:PATH``, the
  agent's ``.command``) hands its own stdin and stdout (``SCM_RIGHTS``): the
  endpoint then reads and writes the agent's pipes itself, newline-delimited
  JSON-RPC, so no process stands between the agent and the proxy, and
  notifications flow back during a call.
- ``http``: MCP's streamable HTTP, stateless: a POSTed request is answered
  with JSON, or with an event stream when the handler sends notifications
  (progress) before its answer; a notification is accepted (202).

Both run the handler in a thread of its own, in the trial's context, so a slow
call holds neither the next one nor the agent's other connection. No MCP SDK
is in the loop: the SDK's stateless server costs ~1.5 ms a request on this
machine, more than the whole budget of the recording proxy (under 1 ms); the
messages are the protocol's own, checked against the SDK's clients in the tests.
"""

from __future__ import annotations

import contextlib
import contextvars
import http.server
import json
import os
import queue
import select
import shutil
import socket
import socketserver
import tempfile
import threading
from collections.abc import Callable
from typing import Any

from ..surroundings import LoopbackServer, stop_serving

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
        self._sessions: set[_Lines] = set()
        self._lock = threading.Lock()
        self._servers: dict[str, socketserver.BaseServer] = {}
        self._closed = False
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
                self._serve("http", _HttpServer(("127.0.0.1", 0), _HttpHandler))
            address: Any = self._servers["http"].server_address
            return f"http://127.0.0.1:{address[1]}/mcp"

    def handle(self, message: Message, notify: Notify) -> Message | None:
        """Run the handler in (a copy of) the trial's context; a bug in it is an error answer."""
        try:
            return self._context.copy().run(self._handle, message, notify)
        except Exception as exc:  # the handler's own failure, never the agent's hang
            return error(message.get("id"), -32603, f"{type(exc).__name__}: {exc}")

    def opened(self, session: _Lines) -> bool:
        """Count a session in (False once the endpoint is closed: it is refused)."""
        with self._lock:
            if self._closed:
                return False
            self._sessions.add(session)
            return True

    def ended(self, session: _Lines) -> None:
        """Count a session out."""
        with self._lock:
            self._sessions.discard(session)

    def close(self) -> None:
        """Stop listening; calls under way finish."""
        with self._lock:
            servers, self._servers = list(self._servers.values()), {}
            sessions, self._closed = list(self._sessions), True
        for server in servers:
            stop_serving(server)
        for session in sessions:  # a client that keeps its server (fastmcp's keep_alive)
            session.stop()
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


class _HttpServer(LoopbackServer):
    endpoint: Endpoint


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
        session = _Lines(self.server.endpoint, *fds)
        try:
            session.serve()
        finally:
            session.close()
        # Returning closes the relay's socket: the relay exits, and the agent sees its server end.


class _Lines:
    """One agent session over stdio: a message a line each way; requests run concurrently.

    Leader and followers: the thread that reads a request hands the reading on
    to another thread, then answers the request itself, so no hand-off lies
    between a request and its answer. ``stop`` ends the session (at the
    trial's end) whether or not the agent closed its end.
    """

    def __init__(self, endpoint: Endpoint, given: int, taken: int) -> None:
        self._endpoint, self._in, self._out = endpoint, given, taken
        self._stop_r, self._stop_w = os.pipe()
        self._poller = select.poll()  # (one reader at a time: the leader)
        self._poller.register(given, select.POLLIN)
        self._poller.register(self._stop_r, select.POLLIN)
        self._buffer = b""
        self._write = threading.Lock()
        self._closed = False
        self._busy = threading.Condition()
        self._working = 0

    def serve(self) -> None:
        """Answer the session's requests until the agent closes its end, and they are done."""
        if not self._endpoint.opened(self):
            return
        with self._busy:
            self._working += 1
        self._follow()
        with self._busy:
            self._busy.wait_for(lambda: self._working == 0)
        self._endpoint.ended(self)

    def stop(self) -> None:
        """End the session: the reader wakes and sees the end."""
        with contextlib.suppress(OSError):
            os.write(self._stop_w, b"x")

    def close(self) -> None:
        """Close the agent's pipes (ours of them) and the stop pipe; later writes are dropped."""
        with self._write:
            self._closed = True
            for fd in (self._in, self._out, self._stop_r, self._stop_w):
                with contextlib.suppress(OSError):
                    os.close(fd)

    def _readline(self) -> bytes:
        """The next line from the agent; empty at its end or at ``stop``."""
        while (cut := self._buffer.find(b"\n")) < 0:
            ready = {fd for fd, _ in self._poller.poll()}
            if self._stop_r in ready:
                return b""
            data = os.read(self._in, 65536)
            if not data:
                line, self._buffer = self._buffer, b""
                return line
            self._buffer += data
        line, self._buffer = self._buffer[: cut + 1], self._buffer[cut + 1 :]
        return line

    def _send(self, message: Message | None) -> None:
        if message is None:
            return
        data = _encode(message) + b"\n"
        with self._write:
            while data and not self._closed:  # (progress of a call whose session ended)
                data = data[os.write(self._out, data) :]

    def _follow(self) -> None:
        """Read the next request, hand the reading on, answer the request."""
        try:
            while line := self._readline():
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
                _WORKERS.submit(self._follow)
                self._send(self._endpoint.handle(message, self._send))
                return
        except OSError:
            pass  # the agent went away: nobody to answer
        finally:
            with self._busy:
                self._working -= 1
                if not self._working:  # (not at every request: ``serve`` waits for none left)
                    self._busy.notify_all()


class _HttpHandler(http.server.BaseHTTPRequestHandler):
    """Streamable HTTP, stateless: no session id, no server-initiated stream."""

    server: _HttpServer
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


class _Workers:
    """The process's daemon threads for the endpoints' sessions, kept for the next task.

    Handing a task to an idle thread costs a queue put; a new thread is
    started only when none is idle. Daemon threads: a session a client left
    open never holds up the interpreter's exit.
    """

    def __init__(self) -> None:
        self._tasks: queue.SimpleQueue[Callable[[], None]] = queue.SimpleQueue()
        self._lock = threading.Lock()
        self._idle = 0

    def submit(self, task: Callable[[], None]) -> None:
        """Run ``task`` in a thread of the pool."""
        with self._lock:
            start = self._idle == 0
            self._idle -= 0 if start else 1
        self._tasks.put(task)
        if start:
            threading.Thread(target=self._work, name="replay-mcp", daemon=True).start()

    def _work(self) -> None:
        while True:
            self._tasks.get()()
            with self._lock:
                self._idle += 1


_WORKERS = _Workers()
