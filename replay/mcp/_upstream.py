"""The real MCP server behind the recording proxy: started by command, or reached by URL.

One JSON-RPC stream per trial: requests out with ids of ours, answers routed
back by id, progress notifications routed to the request they belong to (by
a progress token of ours, mapped back to the agent's). The server's own
requests to the client are not relayed (the proxy tells it the client has no
capabilities: no sampling, roots or elicitation); a ``ping`` is answered.

A server that fails — does not start, exits, writes a line that is not
JSON-RPC, or does not answer in time — is ``McpServerFailed`` for the call
under way and for every later one: one line naming the server.

A server started by command is ``_process.StdioUpstream``; one reached by URL is
``HttpUpstream`` here. The rows a server wrote to its world file are found by
``_file_changes``.
"""

from __future__ import annotations

import contextlib
import itertools
import json
import re
import threading
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol

from recorder import ReplayError

Message = dict[str, Any]
Notify = Callable[[Message], None]
SAFE_ENV = ("HOME", "LANG", "LC_ALL", "LOGNAME", "PATH", "SHELL", "TERM", "TMPDIR", "USER")
"""What a started server inherits of the harness's environment (the SDK's rule, and the
locale): never a secret; the server's own ``env`` adds to it."""


MESSAGE_BYTES = 16 * 2**20
"""Bytes one message of a started server's may hold (``McpServer.max_message_bytes``): a
longer line ends the call under way at once, as the server's failure."""


class ServerWall(Protocol):
    """Walls around a started server's command (``replay.agents.server_wall``).

    Entered for as long as the server runs, it gives the command to start in its place.
    """

    def __call__(
        self, command: Sequence[str], writable: Sequence[str]
    ) -> contextlib.AbstractContextManager[list[str]]:
        """The walled command for ``command``, which may write in ``writable`` alone."""

    def over(self, pid: int) -> str | None:
        """Why the server started as ``pid`` is past the trial's caps (memory, processes)."""


class McpServerFailed(ReplayError):
    """A third-party MCP server failed: it did not start, died, garbled or hung."""


class RpcError(Exception):
    """The server answered with a JSON-RPC error: relayed to the agent as it is."""

    def __init__(self, code: int, message: str) -> None:
        super().__init__(f"[{code}] {message}")
        self.code, self.message = code, message

    @classmethod
    def parse(cls, text: str) -> RpcError | None:
        """The error back from its recorded text (``[code] message``), if it is one."""
        found = re.fullmatch(r"\[(-?\d+)\] (.*)", text, re.S)
        return cls(int(found[1]), found[2]) if found else None


@dataclass
class Pending:
    """A request sent, waiting for its answer.

    ``done`` wakes it: answered, the server failed, or (stdio) its turn to read.
    """

    notify: Notify
    token: Any = None
    done: threading.Event = field(default_factory=threading.Event)
    answer: Message | None = None
    progress: list[Message] = field(default_factory=list)


class Upstream:
    """A JSON-RPC stream to the server; ``_send`` is the transport's, and ``_wait`` may be."""

    def __init__(self, name: str, timeout: float) -> None:
        self.name, self.timeout = name, timeout
        self.failure: str | None = None
        self._ids = itertools.count(1)
        self._pending: dict[int, Pending] = {}
        self._lock = threading.Lock()

    def request(
        self, method: str, params: Mapping[str, Any], notify: Notify, timeout: float | None = None
    ) -> tuple[Message, list[Message]]:
        """Send a request; return its result and the progress it reported on the way.

        Raises:
            RpcError: The server answered with an error.
            McpServerFailed: The server failed (now or before).
        """
        ident = next(self._ids)
        pending = Pending(notify)
        params = dict(params)
        meta = dict(params.get("_meta") or {})
        if "progressToken" in meta:  # ours on the wire, the agent's in what it is told
            pending.token, meta["progressToken"] = meta["progressToken"], f"replay-{ident}"
            params["_meta"] = meta
        with self._lock:
            self._check()
            self._pending[ident] = pending
        try:
            self._send({"jsonrpc": "2.0", "id": ident, "method": method, "params": params})
            wait = self.timeout if timeout is None else timeout
            if not self._wait(pending, wait):
                self.fail(f"MCP server {self.name!r} did not answer {method} within {wait:g} s")
        finally:
            with self._lock:
                self._pending.pop(ident, None)
        answer = pending.answer
        if answer is None:
            raise McpServerFailed(self.failure or f"MCP server {self.name!r} failed")
        if "error" in answer:
            fault = answer["error"] if isinstance(answer["error"], dict) else {}
            raise RpcError(int(fault.get("code", -32603)), str(fault.get("message", "")))
        result = answer.get("result")
        return (result if isinstance(result, dict) else {}), pending.progress

    def notify(self, method: str, params: Mapping[str, Any] | None = None) -> None:
        """Send a notification."""
        self._check()
        self._send({"jsonrpc": "2.0", "method": method, **({"params": params} if params else {})})

    def fail(self, reason: str, *, stop: bool = True) -> None:
        """The server is unusable: the call under way and every later one get ``reason``.

        ``stop``: stop the server too (not when it is about to be closed gently).
        """
        with self._lock:
            if self.failure is None:
                self.failure = reason
            waiting = list(self._pending.values())
        for pending in waiting:
            pending.done.set()
        if stop:
            self._stopped()

    def close(self) -> None:
        """End the stream."""

    def initialized(self, result: Message) -> None:
        """The server answered ``initialize`` with ``result``."""

    def _check(self) -> None:
        if self.failure is not None:
            raise McpServerFailed(self.failure)

    def _send(self, message: Message) -> None:
        raise NotImplementedError

    def _wait(self, pending: Pending, seconds: float) -> bool:
        """Wait until ``pending`` is answered or the server failed (False: ``seconds`` passed)."""
        return pending.done.wait(seconds)

    def _stopped(self) -> None:
        """The transport's part of ``fail``."""

    def _deliver(self, message: Any) -> None:
        """A message from the server: an answer, a notification, or its own request."""
        if not isinstance(message, dict) or message.get("jsonrpc") != "2.0":
            return self.fail(
                f"MCP server {self.name!r} answered malformed JSON-RPC: {cut(message)}"
            )
        method = message.get("method")
        if method is None:  # an answer
            with self._lock:
                pending = self._pending.get(message.get("id"))  # type: ignore[arg-type]
            if pending is not None:
                pending.answer = message
                pending.done.set()
        elif "id" in message:  # its own request: ping, or a capability we said we lack
            reply: Message = {"jsonrpc": "2.0", "id": message["id"], "result": {}}
            if method != "ping":
                reply = {
                    "jsonrpc": "2.0",
                    "id": message["id"],
                    "error": {"code": -32601, "message": f"the recording proxy offers no {method}"},
                }
            self._send(reply)
        elif method == "notifications/progress":
            params = dict(message.get("params") or {})
            token = params.pop("progressToken", None)
            ident = int(token[7:]) if isinstance(token, str) and token[:7] == "replay-" else None
            with self._lock:
                pending = self._pending.get(ident) if ident is not None else None
            if pending is not None:
                pending.progress.append(params)
                note = {"progressToken": pending.token, **params}
                with contextlib.suppress(Exception):  # an agent gone is no failure of the server
                    pending.notify({"jsonrpc": "2.0", "method": method, "params": note})
        # Other notifications (logging, list changes) concern no call: dropped.


def cut(message: Any) -> str:
    """What the server said, cut to 80 characters, for a failure's message."""
    text = message if isinstance(message, str) else json.dumps(message, default=str)
    return repr(text[:80] + ("..." if len(text) > 80 else ""))


class HttpUpstream(Upstream):
    """A server reached at its streamable-HTTP URL (a session id kept once it gives one)."""

    def __init__(self, name: str, url: str, timeout: float) -> None:
        super().__init__(name, timeout)
        import httpx

        self.url = url
        self._client = httpx.Client(timeout=httpx.Timeout(timeout))
        self._headers = {
            "Content-Type": "application/json",
            "Accept": "application/json, text/event-stream",
        }

    def start(self) -> None:
        """Nothing to start: the server runs already."""

    def initialized(self, result: Message) -> None:
        """Every later request names the protocol version agreed (the spec's MUST)."""
        self._headers["MCP-Protocol-Version"] = str(result.get("protocolVersion", ""))

    def _send(self, message: Message) -> None:
        """POST a request in a thread of its own; a notification here and now (in order).

        So ``request``'s deadline holds however slowly the server trickles its answer.
        """
        if "id" in message and "method" in message:
            threading.Thread(target=self._post, args=(message,), daemon=True).start()
        else:
            self._post(message)

    def _post(self, message: Message) -> None:
        import httpx

        body = json.dumps(message, separators=(",", ":"), default=str)
        try:
            with self._client.stream("POST", self.url, content=body, headers=self._headers) as got:
                session = got.headers.get("mcp-session-id")
                if session:
                    self._headers["Mcp-Session-Id"] = session
                if got.status_code == 202 or "id" not in message or "method" not in message:
                    return
                kind = got.headers.get("content-type", "")
                if "text/event-stream" in kind:
                    for line in got.iter_lines():
                        if line.startswith("data:") and line[5:].strip():
                            self._deliver(_json(line[5:]))
                    return
                data = got.read()
                if got.status_code >= 400 and not data.strip().startswith(b"{"):
                    return self.fail(
                        f"MCP server {self.name!r} answered HTTP {got.status_code} to "
                        f"{message['method']}"
                    )
                self._deliver(_json(data))
        except httpx.HTTPError as exc:
            self.fail(f"MCP server {self.name!r} at {self.url} failed: {type(exc).__name__}: {exc}")

    def close(self) -> None:
        """End the session (``DELETE``, if the server gave one) and close the client."""
        if "Mcp-Session-Id" in self._headers:
            with contextlib.suppress(Exception):
                self._client.delete(self.url, headers=self._headers, timeout=2)
        self._client.close()


def _json(data: str | bytes) -> Any:
    try:
        return json.loads(data)
    except ValueError:
        return data if isinstance(data, str) else data.decode("utf-8", "replace")
