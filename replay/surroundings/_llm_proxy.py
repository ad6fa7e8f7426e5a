"""The trial's LLM endpoint for agents in other processes: a recording HTTP proxy.

An agent the harness cannot patch (another language, a child process, a
client of its own) is given ``env.llm_proxy.url`` (``OPENAI_BASE_URL`` in
``env.variables()``) instead of the LLM's address. Each request it makes
there is sent on to the LLM with ``httpx`` from inside the trial, so the
trial's recorder handles it exactly as an in-process call: recorded with its
streamed chunks as they arrive (live), or answered from the cassette
(frozen), under the same allowed-host checks. The answer streams back to
the agent chunk by chunk as the LLM sends it.
"""

from __future__ import annotations

import contextvars
import http.cookiejar
import http.server
import os
import threading
from typing import TYPE_CHECKING, Any
from urllib.parse import urlsplit

from recorder import FixtureUnsupported, Recording, SandboxViolation, refusal

from ._loopback import LoopbackServer, serve_in_thread, stop_serving

if TYPE_CHECKING:
    import httpx

HOP_BY_HOP = frozenset(
    {
        "connection",
        "content-length",
        "host",
        "keep-alive",
        "proxy-connection",
        "te",
        "trailer",
        "transfer-encoding",
        "upgrade",
    }
)
"""Headers that belong to one connection, not to the exchange (RFC 9110, 7.6.1)."""
OURS = frozenset({"content-encoding", "date", "server"})
"""The answer is sent decoded, and the proxy names itself and the date already."""
TIMEOUT_S = 600.0
"""Seconds the LLM may take to answer a request (between two chunks, for a stream)."""


class LlmProxy:
    """The trial's recording proxy to the LLM at ``target``, started on first use of ``url``.

    Args:
        target: The LLM's base URL (``env.llm_base_url``).
    """

    def __init__(self, target: str) -> None:
        where = urlsplit(target)
        self._origin = f"{where.scheme}://{where.netloc}"
        self._path = where.path.rstrip("/")
        self._lock = threading.Lock()
        self._server: _Server | None = None
        self.recording: Recording | None = None
        """The trial's recording, told of the proxy's address (a channel of the trial: an
        in-process client that uses it is recorded once, as the proxy sends it on)."""

    @property
    def url(self) -> str:
        """The proxy's base URL: the LLM's, on 127.0.0.1 and the proxy's port."""
        with self._lock:
            if self._server is None:
                server = _Server(("127.0.0.1", 0), _Forward)
                server.origin, server.context = self._origin, contextvars.copy_context()
                serve_in_thread(server, "replay-llm-proxy")
                self._server = server
                if self.recording is not None:
                    self.recording.channel(f"127.0.0.1:{server.server_address[1]}")
            return f"http://127.0.0.1:{self._server.server_address[1]}{self._path}"

    def close(self) -> None:
        """Stop the proxy, if it started."""
        with self._lock:
            server, self._server = self._server, None
        if server is not None:
            stop_serving(server)


_shared: tuple[int, httpx.Client] | None = None
_shared_lock = threading.Lock()


def _client() -> httpx.Client:
    """The process's client for every proxy's requests (made once: a new one costs ~25 ms).

    httpx's transports are patched per class and find their trial by context, so one
    client serves every trial's recording. A forked child makes its own (the parent's
    kept-alive connections are not its to use).
    """
    global _shared
    import httpx

    with _shared_lock:
        if _shared is None or _shared[0] != os.getpid():
            # No cap on connections (a run's trials in flight never wait for one another's),
            # and no cookie kept: one trial's would be sent with the next trial's requests.
            limits = httpx.Limits(max_connections=None, max_keepalive_connections=100)
            jar = http.cookiejar.CookieJar(http.cookiejar.DefaultCookiePolicy(allowed_domains=[]))
            client = httpx.Client(timeout=TIMEOUT_S, limits=limits, cookies=jar)
            _shared = (os.getpid(), client)
        return _shared[1]


class _Server(LoopbackServer):
    origin: str
    context: contextvars.Context


class _Forward(http.server.BaseHTTPRequestHandler):
    """One request, sent on from inside the trial; its answer streamed back."""

    server: _Server
    protocol_version = "HTTP/1.1"
    _begun = False

    def do_GET(self) -> None:
        self._forward()

    def do_POST(self) -> None:
        self._forward()

    def do_DELETE(self) -> None:
        self._forward()

    def do_HEAD(self) -> None:
        self._forward()

    def do_PUT(self) -> None:
        self._forward()

    def do_PATCH(self) -> None:
        self._forward()

    def _forward(self) -> None:
        if not self.path.startswith("/") or self.path.startswith("//"):
            # ("GET @host:port/..." would make origin + path another authority)
            return self._refused(ValueError(f"not a path on the LLM's host: {self.path[:80]!r}"))
        if "chunked" in (self.headers.get("Transfer-Encoding") or "").lower():
            return self._refused(ValueError("a chunked request body (send Content-Length)"))
        length = int(self.headers.get("Content-Length") or 0)
        body = self.rfile.read(length) if length else b""
        headers = {k: v for k, v in self.headers.items() if k.lower() not in HOP_BY_HOP}
        self.server.context.copy().run(self._send_on, body, headers)

    def _send_on(self, body: bytes, headers: dict[str, str]) -> None:
        url = self.server.origin + self.path
        try:
            with _client().stream(self.command, url, content=body, headers=headers) as answer:
                self._begun = True
                self.send_response(answer.status_code)
                named = {t.strip().lower() for t in answer.headers.get("connection", "").split(",")}
                for key, value in answer.headers.multi_items():
                    if key.lower() not in HOP_BY_HOP | OURS | named:
                        self.send_header(key, value)
                status = answer.status_code
                if self.command == "HEAD" or status in (204, 304) or status < 200:
                    if status != 204:
                        self.send_header("Content-Length", "0")
                    self.end_headers()
                    return
                self.send_header("Transfer-Encoding", "chunked")
                self.end_headers()
                for chunk in answer.iter_bytes():  # decoded: the recorder sees the same
                    if chunk:
                        self.wfile.write(b"%x\r\n%s\r\n" % (len(chunk), chunk))
                        self.wfile.flush()
                self.wfile.write(b"0\r\n\r\n")
        except Exception as exc:  # refused (a sandbox violation, a frozen miss) or unreachable
            self._refused(exc)

    def _refused(self, exc: Exception) -> None:
        """Answer the reason, as one line (a stream cut once begun: the agent sees it).

        What the harness refuses (a request the cassette does not hold, a host the trial
        may not reach, a request that is not the LLM's) is 400 with ``x-should-retry:
        false``, the error body the OpenAI and Anthropic SDKs read: asking again cannot
        change the answer, and an SDK retrying a 5xx would spend the trial's deadline on
        it. An LLM that cannot be reached is 502, which clients may retry.
        """
        self.close_connection = True
        if self._begun:
            return
        refused = isinstance(exc, (FixtureUnsupported, SandboxViolation, ValueError))
        said = f"agent-replay's LLM proxy: {type(exc).__name__}: {exc}"
        answer = refusal(said, status=400 if refused else 502)
        try:
            self.send_response(answer.status)
            for name, value in answer.headers:
                self.send_header(name, value)
            self.end_headers()
            self.wfile.write(b"".join(answer.chunks))
        except OSError:
            pass

    def log_message(self, format: str, *args: Any) -> None:
        pass
