"""A stub LLM server speaking the OpenAI and Anthropic chat HTTP APIs, for testing agents offline.

Replies come from a pluggable, deterministic policy; only the standard library is used.
"""

from __future__ import annotations

import contextlib
import itertools
import json
import logging
import math
import random
import re
import socket
import sys
import threading
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, replace
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

from ._stub_policies import (
    DEFAULT_FINAL,
    ChatRequest,
    EchoPolicy,
    Fail,
    JudgePolicy,
    Policy,
    Reply,
    ScriptedPolicy,
    ToolCall,
)

__all__ = [
    "ChatRequest",
    "EchoPolicy",
    "Fail",
    "JudgePolicy",
    "Policy",
    "Reply",
    "ScriptedPolicy",
    "StubLLM",
    "ToolCall",
    "serve",
]

_log = logging.getLogger(__name__)

_OPENAI_PATH = "/v1/chat/completions"
_ANTHROPIC_PATH = "/v1/messages"
_ARGUMENT_PIECES = 3
_MAX_LINE = 65_537
# How often the accept loop checks for stop(); bounds how long stop() takes.
_POLL_INTERVAL = 0.02


# --------------------------------------------------------------------------- normalization


class _BadRequest(Exception):
    """The request body is JSON but not a valid chat request."""


def _text_of(content: Any) -> str:
    """Flatten a message content (string, None, or a list of parts/blocks) to text."""
    if content is None:
        return ""
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        texts: list[str] = []
        for part in content:
            if isinstance(part, str):
                texts.append(part)
            elif isinstance(part, dict) and isinstance(part.get("text"), str):
                texts.append(part["text"])
        return "".join(texts)
    raise _BadRequest("message content must be a string or a list of content parts")


def _message(
    role: str,
    content: str,
    tool_calls: list[dict[str, Any]] | None = None,
    tool_call_id: str | None = None,
) -> dict[str, Any]:
    return {
        "role": role,
        "content": content,
        "tool_calls": tool_calls or [],
        "tool_call_id": tool_call_id,
    }


def _require_model_and_messages(body: dict[str, Any]) -> tuple[str, list[Any]]:
    model = body.get("model", "")
    if not isinstance(model, str):
        raise _BadRequest("'model' must be a string")
    messages = body.get("messages")
    if not isinstance(messages, list):
        raise _BadRequest("'messages' must be a list")
    for message in messages:
        if not isinstance(message, dict) or not isinstance(message.get("role"), str):
            raise _BadRequest("each message must be an object with a string 'role'")
    return model, messages


def _normalize_openai(body: dict[str, Any]) -> ChatRequest:
    model, raw_messages = _require_model_and_messages(body)
    messages: list[dict[str, Any]] = []
    for raw in raw_messages:
        tool_calls: list[dict[str, Any]] = []
        for call in raw.get("tool_calls") or []:
            function = call.get("function") if isinstance(call, dict) else None
            if not isinstance(function, dict):
                raise _BadRequest("each tool call must have a 'function' object")
            arguments = function.get("arguments", "")
            tool_calls.append(
                {
                    "id": str(call.get("id", "")),
                    "type": "function",
                    "function": {
                        "name": str(function.get("name", "")),
                        "arguments": arguments
                        if isinstance(arguments, str)
                        else json.dumps(arguments),
                    },
                }
            )
        tool_call_id = raw.get("tool_call_id")
        messages.append(
            _message(
                raw["role"],
                _text_of(raw.get("content")),
                tool_calls,
                str(tool_call_id) if tool_call_id is not None else None,
            )
        )
    tools = [
        str(tool["function"]["name"])
        for tool in body.get("tools") or []
        if isinstance(tool, dict)
        and isinstance(tool.get("function"), dict)
        and "name" in tool["function"]
    ]
    return ChatRequest(model=model, messages=messages, tools=tools, api="openai")


def _normalize_anthropic(body: dict[str, Any]) -> ChatRequest:
    model, raw_messages = _require_model_and_messages(body)
    messages: list[dict[str, Any]] = []
    system = body.get("system")
    if system:
        messages.append(_message("system", _text_of(system)))
    for raw in raw_messages:
        role = raw["role"]
        content = raw.get("content")
        if not isinstance(content, list):
            messages.append(_message(role, _text_of(content)))
            continue
        texts: list[str] = []
        tool_calls: list[dict[str, Any]] = []
        tool_results: list[dict[str, Any]] = []
        for block in content:
            if not isinstance(block, dict):
                raise _BadRequest("content blocks must be objects")
            kind = block.get("type")
            if kind == "text":
                texts.append(str(block.get("text", "")))
            elif kind == "tool_use":
                tool_calls.append(
                    {
                        "id": str(block.get("id", "")),
                        "type": "function",
                        "function": {
                            "name": str(block.get("name", "")),
                            "arguments": json.dumps(block.get("input", {}), ensure_ascii=False),
                        },
                    }
                )
            elif kind == "tool_result":
                tool_results.append(
                    _message(
                        "tool",
                        _text_of(block.get("content")),
                        tool_call_id=str(block.get("tool_use_id", "")),
                    )
                )
        # Tool results answer the previous assistant turn, so they come first, as in OpenAI.
        messages.extend(tool_results)
        if texts or tool_calls or not tool_results:
            messages.append(_message(role, "".join(texts), tool_calls))
    tools = [
        str(tool["name"])
        for tool in body.get("tools") or []
        if isinstance(tool, dict) and "name" in tool
    ]
    return ChatRequest(model=model, messages=messages, tools=tools, api="anthropic")


# --------------------------------------------------------------------------- rendering


def _tokens(text: str) -> int:
    return math.ceil(len(text) / 4)


def _prompt_tokens(request: ChatRequest) -> int:
    chars = 0
    for message in request.messages:
        chars += len(message["content"])
        for call in message["tool_calls"]:
            chars += len(call["function"]["name"]) + len(call["function"]["arguments"])
    return math.ceil(chars / 4)


def _arguments_json(call: ToolCall) -> str:
    return json.dumps(call.arguments, ensure_ascii=False)


def _completion_tokens(reply: Reply) -> int:
    text = reply.content or ""
    text += "".join(call.name + _arguments_json(call) for call in reply.tool_calls)
    return _tokens(text)


def _reply_text(reply: Reply) -> str | None:
    """The reply's text; an empty reply becomes an empty text."""
    if reply.content is None and not reply.tool_calls:
        return ""
    return reply.content


def _words(text: str) -> list[str]:
    """Split text into word pieces that keep their trailing whitespace."""
    return [piece for piece in re.findall(r"\S*\s*", text) if piece]


def _pieces(text: str, count: int = _ARGUMENT_PIECES) -> list[str]:
    size = max(1, math.ceil(len(text) / count))
    return [text[i : i + size] for i in range(0, len(text), size)] or [""]


def _sse(data: Any, event: str | None = None) -> bytes:
    prefix = f"event: {event}\n" if event else ""
    payload = data if isinstance(data, str) else json.dumps(data, ensure_ascii=False)
    return f"{prefix}data: {payload}\n\n".encode()


@dataclass(frozen=True, slots=True)
class _Answer:
    """A reply plus the deterministic ids assigned to it."""

    request: ChatRequest
    reply: Reply
    response_id: str
    tool_call_ids: tuple[str, ...]


def _openai_completion(answer: _Answer) -> dict[str, Any]:
    reply = answer.reply
    message: dict[str, Any] = {
        "role": "assistant",
        "content": _reply_text(reply),
        "refusal": None,
    }
    if reply.tool_calls:
        message["tool_calls"] = [
            {
                "id": call_id,
                "type": "function",
                "function": {"name": call.name, "arguments": _arguments_json(call)},
            }
            for call_id, call in zip(answer.tool_call_ids, reply.tool_calls, strict=True)
        ]
    prompt, completion = _prompt_tokens(answer.request), _completion_tokens(reply)
    return {
        "id": answer.response_id,
        "object": "chat.completion",
        "created": 0,
        "model": answer.request.model,
        "choices": [
            {
                "index": 0,
                "message": message,
                "logprobs": None,
                "finish_reason": "tool_calls" if reply.tool_calls else "stop",
            }
        ],
        "usage": {
            "prompt_tokens": prompt,
            "completion_tokens": completion,
            "total_tokens": prompt + completion,
        },
    }


def _openai_stream(answer: _Answer, include_usage: bool) -> Iterator[bytes]:
    reply = answer.reply
    text = _reply_text(reply)

    def chunk(delta: dict[str, Any], finish_reason: str | None = None) -> bytes:
        return _sse(
            {
                "id": answer.response_id,
                "object": "chat.completion.chunk",
                "created": 0,
                "model": answer.request.model,
                "choices": [
                    {"index": 0, "delta": delta, "logprobs": None, "finish_reason": finish_reason}
                ],
            }
        )

    yield chunk({"role": "assistant", "content": "" if text is not None else None})
    for word in _words(text or ""):
        yield chunk({"content": word})
    for index, (call_id, call) in enumerate(
        zip(answer.tool_call_ids, reply.tool_calls, strict=True)
    ):
        yield chunk(
            {
                "tool_calls": [
                    {
                        "index": index,
                        "id": call_id,
                        "type": "function",
                        "function": {"name": call.name, "arguments": ""},
                    }
                ]
            }
        )
        for piece in _pieces(_arguments_json(call)):
            yield chunk({"tool_calls": [{"index": index, "function": {"arguments": piece}}]})
    yield chunk({}, "tool_calls" if reply.tool_calls else "stop")
    if include_usage:
        prompt, completion = _prompt_tokens(answer.request), _completion_tokens(reply)
        yield _sse(
            {
                "id": answer.response_id,
                "object": "chat.completion.chunk",
                "created": 0,
                "model": answer.request.model,
                "choices": [],
                "usage": {
                    "prompt_tokens": prompt,
                    "completion_tokens": completion,
                    "total_tokens": prompt + completion,
                },
            }
        )
    yield _sse("[DONE]")


def _anthropic_blocks(answer: _Answer) -> list[dict[str, Any]]:
    blocks: list[dict[str, Any]] = []
    text = _reply_text(answer.reply)
    if text is not None:
        blocks.append({"type": "text", "text": text})
    for call_id, call in zip(answer.tool_call_ids, answer.reply.tool_calls, strict=True):
        blocks.append(
            {"type": "tool_use", "id": call_id, "name": call.name, "input": call.arguments}
        )
    return blocks


def _anthropic_message(answer: _Answer) -> dict[str, Any]:
    return {
        "id": answer.response_id,
        "type": "message",
        "role": "assistant",
        "model": answer.request.model,
        "content": _anthropic_blocks(answer),
        "stop_reason": "tool_use" if answer.reply.tool_calls else "end_turn",
        "stop_sequence": None,
        "usage": {
            "input_tokens": _prompt_tokens(answer.request),
            "output_tokens": _completion_tokens(answer.reply),
        },
    }


def _anthropic_stream(answer: _Answer) -> Iterator[bytes]:
    message = _anthropic_message(answer)
    start = {**message, "content": [], "stop_reason": None}
    start["usage"] = {**message["usage"], "output_tokens": 0}
    yield _sse({"type": "message_start", "message": start}, "message_start")
    for index, block in enumerate(message["content"]):
        first: dict[str, Any]
        if block["type"] == "text":
            pieces = _words(block["text"])
            first = {"type": "text", "text": ""}
            deltas = [{"type": "text_delta", "text": piece} for piece in pieces]
        else:
            pieces = _pieces(json.dumps(block["input"], ensure_ascii=False))
            first = {**block, "input": {}}
            deltas = [{"type": "input_json_delta", "partial_json": piece} for piece in pieces]
        yield _sse(
            {"type": "content_block_start", "index": index, "content_block": first},
            "content_block_start",
        )
        for delta in deltas:
            yield _sse(
                {"type": "content_block_delta", "index": index, "delta": delta},
                "content_block_delta",
            )
        yield _sse({"type": "content_block_stop", "index": index}, "content_block_stop")
    yield _sse(
        {
            "type": "message_delta",
            "delta": {"stop_reason": message["stop_reason"], "stop_sequence": None},
            "usage": {"output_tokens": message["usage"]["output_tokens"]},
        },
        "message_delta",
    )
    yield _sse({"type": "message_stop"}, "message_stop")


# --------------------------------------------------------------------------- HTTP server


def _error_body(message: str, kind: str) -> dict[str, Any]:
    return {"error": {"message": message, "type": kind}}


class _Server(ThreadingHTTPServer):
    daemon_threads = True
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
        if path not in (_OPENAI_PATH, _ANTHROPIC_PATH):
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
            if path == _OPENAI_PATH:
                request = _normalize_openai(body)
            else:
                request = _normalize_anthropic(body)
        except _BadRequest as exc:
            self._send_json(400, _error_body(str(exc), "invalid_request_error"))
            return
        stream = body.get("stream") is True
        options = body.get("stream_options")
        include_usage = isinstance(options, dict) and options.get("include_usage") is True
        try:
            answer = stub._answer(request)
            if isinstance(answer, Fail):
                stub._wait(answer.delay)
                self._send_json(answer.status, _error_body(answer.message, "stub_failure"))
                return
            stub._wait(answer.reply.delay)
            # Render fully before sending anything, so a bad reply is a clean 500.
            if path == _OPENAI_PATH:
                events = list(_openai_stream(answer, include_usage)) if stream else None
                payload = None if stream else _openai_completion(answer)
            else:
                events = list(_anthropic_stream(answer)) if stream else None
                payload = None if stream else _anthropic_message(answer)
            data = json.dumps(payload, ensure_ascii=False).encode() if payload else b""
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

    Serves ``POST /v1/chat/completions`` (OpenAI) and ``POST /v1/messages`` (Anthropic),
    streamed or not, with replies chosen by ``policy``. Ids are derived from counters and
    ``created`` is always 0, so the same requests give byte-identical responses.

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
        """Base URL for the OpenAI SDK (``url + "/v1"``)."""
        return self.url + "/v1"

    @property
    def anthropic_base_url(self) -> str:
        """Base URL for the Anthropic SDK (the root URL)."""
        return self.url

    @property
    def requests(self) -> list[dict[str, Any]]:
        """Copies of the JSON bodies received on the chat endpoints, in arrival order."""
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

    def _answer(self, request: ChatRequest) -> _Answer | Fail:
        with self._lock:
            flaky = self._rng.random() < self.flake_rate
        reply = self._flaky_reply(request) if flaky else self.policy(request)
        if isinstance(reply, Fail):
            return reply
        if not isinstance(reply, Reply):
            raise TypeError(f"policy returned {type(reply).__name__}, expected Reply or Fail")
        openai = request.api == "openai"
        with self._lock:
            response_id = ("chatcmpl-stub-{}" if openai else "msg_stub_{}").format(
                next(self._response_ids)
            )
            call_ids = tuple(
                ("call_stub_{}" if openai else "toolu_stub_{}").format(next(self._tool_call_ids))
                for _ in reply.tool_calls
            )
        return _Answer(request, reply, response_id, call_ids)

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
    with StubLLM(policy, seed=seed, flake_rate=flake_rate, host=host, port=port) as stub:
        print(
            f"stub LLM listening on {stub.url} "
            f"(OpenAI base URL {stub.openai_base_url}, Anthropic base URL "
            f"{stub.anthropic_base_url}); Ctrl-C to stop",
            file=sys.stderr,
            flush=True,
        )
        with contextlib.suppress(KeyboardInterrupt):
            threading.Event().wait()
