"""A stub LLM server speaking the OpenAI and Anthropic HTTP APIs, for testing agents offline.

Replies come from a pluggable, deterministic policy; only the standard library is used.
This module is the server and its dispatch; each API's wire format lives in its own
module (``_openai``, ``_anthropic``, ``_responses``).
"""

from __future__ import annotations

import contextlib
import itertools
import json
import logging
import random
import socket
import sys
import threading
from collections.abc import Iterable
from dataclasses import replace
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

from . import _anthropic, _openai, _responses
from ._policies import (
    DEFAULT_FINAL,
    ChatRequest,
    EchoPolicy,
    Fail,
    Policy,
    Reply,
)
from ._wire import Answer, BadRequest, Endpoint

_log = logging.getLogger(__name__)

# Request path -> the API served there.
_ENDPOINTS: dict[str, Endpoint] = {
    "/v1/chat/completions": _openai.ENDPOINT,
    "/v1/messages": _anthropic.ENDPOINT,
    "/v1/responses": _responses.ENDPOINT,
}
_MAX_LINE = 65_537
# How often the accept loop checks for stop(); bounds how long stop() takes.
_POLL_INTERVAL = 0.02


# --------------------------------------------------------------------------- HTTP server


def _error_body(message: str, kind: str) -> dict[str, Any]:
    return {"error": {"message": message, "type": kind}}


class _Server(ThreadingHTTPServer):
    daemon_threads = True
    request_queue_size = 128  # (socketserver's 5 resets clients that connect at once)
    stub: StubLLM

    def handle_error(self, request: Any, client_address: Any) -> None:
        if isinstance(sys.exc_info()[1], (ConnectionResetError, BrokenPipeError)):
            return  # a client that hung up: nothing to report
        super().handle_error(request, client_address)


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    disable_nagle_algorithm = True
    server_version = "stub-llm"
    sys_version = ""
    server: _Server

    def setup(self) -> None:
        super().setup()
        self.server.stub._track(self.connection)

    def finish(self) -> None:
        try:
            super().finish()
        finally:
            self.server.stub._untrack(self.connection)

    def log_message(self, format: str, *args: Any) -> None:
        _log.debug("%s - " + format, self.address_string(), *args)

    def do_POST(self) -> None:
        self._dispatch()

    def do_GET(self) -> None:
        self._dispatch()

    def do_PUT(self) -> None:
        self._dispatch()

    def do_DELETE(self) -> None:
        self._dispatch()

    def do_PATCH(self) -> None:
        self._dispatch()

    def _dispatch(self) -> None:
        try:
            raw = self._read_body()
        except ValueError:
            self.close_connection = True
            self._send_json(400, _error_body("malformed request body", "invalid_request_error"))
            return
        path = self.path.split("?", 1)[0]
        self.log_message('"%s" %s', self.requestline, len(raw))
        endpoint = _ENDPOINTS.get(path)
        if endpoint is None:
            self._send_json(404, _error_body(f"unknown path: {path}", "not_found_error"))
            return
        if self.command != "POST":
            self._send_json(
                405,
                _error_body(
                    f"method {self.command} not allowed on {path}", "invalid_request_error"
                ),
            )
            return
        try:
            body = json.loads(raw)
        except (ValueError, UnicodeDecodeError) as exc:
            self._send_json(
                400, _error_body(f"malformed JSON body: {exc}", "invalid_request_error")
            )
            return
        if not isinstance(body, dict):
            self._send_json(
                400, _error_body("request body must be a JSON object", "invalid_request_error")
            )
            return
        stub = self.server.stub
        stub._record(body)
        try:
            request = endpoint.normalize(body)
        except BadRequest as exc:
            self._send_json(400, _error_body(str(exc), "invalid_request_error"))
            return
        stream = body.get("stream") is True
        try:
            answer = stub._answer(request, endpoint)
            if isinstance(answer, Fail):
                stub._wait(answer.delay)
                self._send_json(answer.status, _error_body(answer.message, "stub_failure"))
                return
            stub._wait(answer.reply.delay)
            # Render fully before sending anything, so a bad reply is a clean 500.
            events = list(endpoint.stream(answer, body)) if stream else None
            data = (
                b""
                if stream
                else json.dumps(endpoint.render(answer, body), ensure_ascii=False).encode()
            )
        except Exception as exc:
            _log.exception("stub LLM policy failed")
            self._send_json(500, _error_body(f"policy failed: {exc!r}", "server_error"))
            return
        if events is not None:
            self._send_stream(events)
        else:
            self._send_bytes(200, data)

    def _read_body(self) -> bytes:
        if "chunked" in self.headers.get("Transfer-Encoding", "").lower():
            parts: list[bytes] = []
            while True:
                size = int(self.rfile.readline(_MAX_LINE).split(b";", 1)[0].strip(), 16)
                if size == 0:
                    while self.rfile.readline(_MAX_LINE) not in (b"\r\n", b"\n", b""):
                        pass  # discard trailers
                    return b"".join(parts)
                parts.append(self.rfile.read(size))
                self.rfile.readline(_MAX_LINE)
        length = int(self.headers.get("Content-Length") or 0)
        if length < 0:
            raise ValueError("negative Content-Length")
        return self.rfile.read(length) if length else b""

    def _send_json(self, status: int, payload: dict[str, Any]) -> None:
        self._send_bytes(status, json.dumps(payload, ensure_ascii=False).encode())

    def _send_bytes(self, status: int, data: bytes) -> None:
        self.send_response_only(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        if self.close_connection:
            self.send_header("Connection", "close")
        try:
            self.end_headers()
            self.wfile.write(data)
        except (BrokenPipeError, ConnectionResetError):
            self.close_connection = True

    def _send_stream(self, events: Iterable[bytes]) -> None:
        chunked = self.request_version == "HTTP/1.1"
        self.send_response_only(200)
        self.send_header("Content-Type", "text/event-stream; charset=utf-8")
        self.send_header("Cache-Control", "no-cache")
        if chunked:
            self.send_header("Transfer-Encoding", "chunked")
        else:
            self.close_connection = True
            self.send_header("Connection", "close")
        self.end_headers()
        try:
            for event in events:
                self.wfile.write(b"%x\r\n%s\r\n" % (len(event), event) if chunked else event)
                self.wfile.flush()
            if chunked:
                self.wfile.write(b"0\r\n\r\n")
                self.wfile.flush()
        except (BrokenPipeError, ConnectionResetError):
            self.close_connection = True


class StubLLM:
    """An OpenAI- and Anthropic-compatible chat server on loopback, run in a daemon thread.

    Serves ``POST /v1/chat/completions`` (OpenAI chat completions), ``POST /v1/responses``
    (the OpenAI Responses API, used by openai-agents) and ``POST /v1/messages``
    (Anthropic), streamed or not, with replies chosen by ``policy``. Ids are derived from
    counters and ``created`` (``created_at``) is always 0, so the same requests give
    byte-identical responses.

    The server keeps no conversation state: a Responses request must send the whole
    conversation in ``input`` (as clients do with ``store=False``); one that sets
    ``previous_response_id`` or ``conversation`` is answered 400.

    Flakiness: for every chat request the server draws one number from its own
    ``random.Random(seed)`` (under a lock, in the order requests arrive). With probability
    ``flake_rate`` the request is answered not with the policy's reply but with the reply
    of the previous turn, as if the model repeated its last action (a duplicated tool call,
    like a double refund). The previous turn's reply is the policy's answer to the
    conversation cut just before its last assistant message; its tool calls get fresh ids.
    At turn 0 (no assistant message yet) a flake answers the policy's ``final`` text
    instead (``"Done."`` for policies without a string ``final`` attribute), so the agent
    stops early. The same seed and the same sequence of requests give the same behaviour.

    Example:
        >>> with StubLLM(ScriptedPolicy([Reply(content="hi")])) as stub:
        ...     client = openai.OpenAI(base_url=stub.openai_base_url, api_key="test")
    """

    def __init__(
        self,
        policy: Policy | None = None,
        *,
        seed: int = 0,
        flake_rate: float = 0.0,
        host: str = "127.0.0.1",
        port: int = 0,
    ) -> None:
        """Configure the server; it is not started until `start` or ``__enter__``.

        Args:
            policy: Decides the replies; defaults to `EchoPolicy`.
            seed: Seed of the server's random generator used for flakiness.
            flake_rate: Probability, in [0, 1], that a request gets a flaky reply.
            host: Address to bind.
            port: Port to bind; 0 picks a free one.

        Raises:
            ValueError: If ``flake_rate`` is outside [0, 1].
        """
        if not 0.0 <= flake_rate <= 1.0:
            raise ValueError(f"flake_rate must be within [0, 1], got {flake_rate}")
        self.policy: Policy = policy if policy is not None else EchoPolicy()
        self.seed = seed
        self.flake_rate = flake_rate
        self._host = host
        self._port = port
        self._lock = threading.Lock()
        self._rng = random.Random(seed)
        self._response_ids = itertools.count(1)
        self._tool_call_ids = itertools.count(1)
        self._requests: list[dict[str, Any]] = []
        self._connections: set[socket.socket] = set()
        self._closing = False
        self._stopping = threading.Event()
        self._server: _Server | None = None
        self._thread: threading.Thread | None = None

    def __repr__(self) -> str:
        where = self.url if self._server is not None else "stopped"
        return f"StubLLM({self.policy!r}, {where})"

    def __enter__(self) -> StubLLM:
        self.start()
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.stop()

    def start(self) -> None:
        """Bind the socket and start serving in a daemon thread.

        Raises:
            RuntimeError: If the server is already running.
        """
        if self._server is not None:
            raise RuntimeError("StubLLM is already running")
        server = _Server((self._host, self._port), _Handler)
        server.stub = self
        self._closing = False
        self._stopping.clear()
        self._server = server
        self._thread = threading.Thread(
            target=server.serve_forever,
            kwargs={"poll_interval": _POLL_INTERVAL},
            name=f"stub-llm-{self.port}",
            daemon=True,
        )
        self._thread.start()

    def stop(self) -> None:
        """Stop serving, close open connections and join the server thread.

        Safe to call more than once.
        """
        server, thread = self._server, self._thread
        if server is None:
            return
        self._stopping.set()
        server.shutdown()
        with self._lock:
            self._closing = True
            connections = list(self._connections)
        for connection in connections:
            _shutdown_socket(connection)
        server.server_close()  # joins the handler threads
        if thread is not None:
            thread.join()
        self._server = None
        self._thread = None

    @property
    def port(self) -> int:
        """The bound port.

        Raises:
            RuntimeError: If the server is not running.
        """
        if self._server is None:
            raise RuntimeError("StubLLM is not running")
        return int(self._server.server_address[1])

    @property
    def url(self) -> str:
        """Root URL, e.g. ``http://127.0.0.1:PORT``."""
        host = self._host if ":" not in self._host else f"[{self._host}]"
        return f"http://{host}:{self.port}"

    @property
    def openai_base_url(self) -> str:
        """Base URL for the OpenAI SDK (``url + "/v1"``), chat completions and Responses."""
        return self.url + "/v1"

    @property
    def anthropic_base_url(self) -> str:
        """Base URL for the Anthropic SDK (the root URL)."""
        return self.url

    @property
    def requests(self) -> list[dict[str, Any]]:
        """Copies of the JSON bodies received on the model endpoints, in arrival order."""
        with self._lock:
            return list(self._requests)

    # Called from handler threads.

    def _track(self, connection: socket.socket) -> None:
        with self._lock:
            self._connections.add(connection)
            closing = self._closing
        if closing:
            _shutdown_socket(connection)

    def _untrack(self, connection: socket.socket) -> None:
        with self._lock:
            self._connections.discard(connection)

    def _record(self, body: dict[str, Any]) -> None:
        with self._lock:
            self._requests.append(body)

    def _answer(self, request: ChatRequest, endpoint: Endpoint) -> Answer | Fail:
        with self._lock:
            flaky = self._rng.random() < self.flake_rate
        reply = self._flaky_reply(request) if flaky else self.policy(request)
        if isinstance(reply, Fail):
            return reply
        if not isinstance(reply, Reply):
            raise TypeError(f"policy returned {type(reply).__name__}, expected Reply or Fail")
        with self._lock:
            response_id = endpoint.response_id.format(next(self._response_ids))
            call_ids = tuple(
                endpoint.tool_call_id.format(next(self._tool_call_ids)) for _ in reply.tool_calls
            )
        return Answer(request, reply, response_id, call_ids)

    def _wait(self, seconds: float) -> None:
        """Sleep ``seconds``, waking early when the server stops."""
        if seconds > 0:
            self._stopping.wait(seconds)

    def _flaky_reply(self, request: ChatRequest) -> Reply | Fail:
        assistant_at = [i for i, m in enumerate(request.messages) if m["role"] == "assistant"]
        if not assistant_at:
            final = getattr(self.policy, "final", None)
            return Reply(content=final if isinstance(final, str) else DEFAULT_FINAL)
        previous = replace(request, messages=request.messages[: assistant_at[-1]])
        return self.policy(previous)


def _shutdown_socket(connection: socket.socket) -> None:
    with contextlib.suppress(OSError):  # already closed by the peer
        connection.shutdown(socket.SHUT_RDWR)


def serve(
    policy: Policy,
    *,
    host: str,
    port: int,
    seed: int = 0,
    flake_rate: float = 0.0,
) -> None:
    """Run a stub LLM server in the foreground until interrupted (Ctrl-C).

    Args:
        policy: Decides the replies.
        host: Address to bind.
        port: Port to bind; 0 picks a free one.
        seed: Seed of the random generator used for flakiness.
        flake_rate: Probability that a request gets a flaky reply (see `StubLLM`).
    """
    # Suppress Ctrl-C around the whole run: a caller may press it as soon as the line
    # below is printed, before the wait starts.
    with (
        contextlib.suppress(KeyboardInterrupt),
        StubLLM(policy, seed=seed, flake_rate=flake_rate, host=host, port=port) as stub,
    ):
        print(
            f"stub LLM listening on {stub.url} "
            f"(OpenAI base URL {stub.openai_base_url}, Anthropic base URL "
            f"{stub.anthropic_base_url}); Ctrl-C to stop",
            file=sys.stderr,
            flush=True,
        )
        threading.Event().wait()
