"""The stub LLM's HTTP side: a threaded server, and a handler that dispatches by path.

Each request is parsed by its API's module (``_openai``, ``_anthropic``,
``_responses``), answered by the ``StubLLM``'s policy, and written back as JSON
or as an event stream.
"""

from __future__ import annotations

import json
import logging
import sys
from collections.abc import Iterable
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import TYPE_CHECKING, Any

from . import _anthropic, _openai, _responses
from ._policies import Fail
from ._wire import BadRequest, Endpoint

if TYPE_CHECKING:
    from ._server import StubLLM

_log = logging.getLogger("replay.stub_llm._server")

# Request path -> the API served there.
_ENDPOINTS: dict[str, Endpoint] = {
    "/v1/chat/completions": _openai.ENDPOINT,
    "/v1/messages": _anthropic.ENDPOINT,
    "/v1/responses": _responses.ENDPOINT,
}
_MAX_LINE = 65_537


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
