"""A stub LLM server speaking the OpenAI and Anthropic HTTP APIs, for testing agents offline.

Replies come from a pluggable, deterministic policy; only the standard library is used.
This module is the server (its HTTP side: ``_http``); each API's wire format lives in its own
module (``_openai``, ``_anthropic``, ``_responses``).
"""

from __future__ import annotations

import contextlib
import itertools
import random
import socket
import sys
import threading
from dataclasses import replace
from typing import Any

from ._http import _Handler, _Server
from ._policies import (
    DEFAULT_FINAL,
    ChatRequest,
    EchoPolicy,
    Fail,
    Policy,
    Reply,
)
from ._wire import Answer, Endpoint

# How often the accept loop checks for stop(); bounds how long stop() takes.
_POLL_INTERVAL = 0.02


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
