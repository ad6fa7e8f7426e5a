"""A third-party MCP server started by command: newline-delimited JSON-RPC on its stdio.

The server's stdout is read by the calls waiting on it, not by a thread of its
own: the call that waits reads (one at a time) and delivers whatever comes,
its own answer, other calls' answers and progress, the server's requests, so
no thread stands between the server's answer and the call (that hand-off, a
thread woken by another, cost ~0.1 ms a call: a fifth of the proxy's budget).
Once its answer is in, the reader hands the reading to another call still
waiting, if any. While no call waits, nothing is read: what the server says
meanwhile (a notification, a ``ping``) is read with the next call's answer,
and a server that exited meanwhile fails the next call, with its exit code and
last words, as it did when a thread read. Its stderr is drained by a thread,
its last lines kept for the failure's message.
"""

from __future__ import annotations

import collections
import contextlib
import json
import os
import select
import signal
import subprocess
import threading
import time
from collections.abc import Mapping, Sequence

from recorder import ReplayError

from ._upstream import (
    MESSAGE_BYTES,
    SAFE_ENV,
    McpServerFailed,
    Message,
    Pending,
    ServerWall,
    Upstream,
    cut,
)

EXIT_S = 2.0
"""Seconds a server that closed its stdin is given to exit, for its exit code and last words."""


class StdioUpstream(Upstream):
    """A server started by command, speaking newline-delimited JSON-RPC on its stdio."""

    def __init__(
        self,
        name: str,
        command: Sequence[str],
        env: Mapping[str, str],
        timeout: float,
        wall: ServerWall | None = None,
        writable: Sequence[str] = (),
        max_message: int = MESSAGE_BYTES,
    ) -> None:
        super().__init__(name, timeout)
        self._command, self._env = list(command), dict(env)
        self._wall, self._writable, self._max = wall, list(writable), max_message
        self._walls = contextlib.ExitStack()
        self._process: subprocess.Popen[bytes] | None = None
        self._stderr: collections.deque[str] = collections.deque(maxlen=5)
        self._write = threading.Lock()
        self._closing = False
        self._threads: list[threading.Thread] = []
        self._reading = threading.Lock()
        """Held by the call that reads the server's stdout (``_wait``)."""
        self._buffer = bytearray()
        """What was read of the server's stdout past its last whole line."""
        self._wake_r, self._wake_w = os.pipe()
        """Written once the server failed (or is closed): a reader waiting on its stdout wakes."""
        self._woken = False
        self._poller = select.poll()
        self._poller.register(self._wake_r, select.POLLIN)

    def start(self) -> None:
        """Start the process.

        Raises:
            McpServerFailed: It could not be started.
        """
        env = {k: os.environ[k] for k in SAFE_ENV if k in os.environ} | self._env
        try:
            argv = self._command
            if self._wall is not None:
                argv = self._walls.enter_context(self._wall(self._command, self._writable))
            self._process = subprocess.Popen(
                argv,
                stdin=subprocess.PIPE,
                stdout=subprocess.PIPE,
                stderr=subprocess.PIPE,
                env=env,
                start_new_session=True,
            )
        except (OSError, ValueError, ReplayError) as exc:
            self._walls.close()
            raise McpServerFailed(
                f"MCP server {self.name!r} ({' '.join(self._command)}) did not start: {exc}"
            ) from None
        assert self._process.stdout is not None
        self._poller.register(self._process.stdout.fileno(), select.POLLIN)
        watched = [self._watch] if self._wall is not None else []
        self._threads = [
            threading.Thread(target=target, name=f"mcp-{self.name}", daemon=True)
            for target in (self._drain, *watched)
        ]
        for thread in self._threads:
            thread.start()

    def fail(self, reason: str, *, stop: bool = True) -> None:
        """As ``Upstream.fail``; a call reading the server's stdout stops waiting on it."""
        super().fail(reason, stop=stop)
        self._wake()

    def _wake(self) -> None:
        with self._lock:  # once: the pipe is never read, only polled
            if not self._woken and self._wake_w >= 0:
                self._woken = True
                with contextlib.suppress(OSError):
                    os.write(self._wake_w, b"x")

    def _wait(self, pending: Pending, seconds: float) -> bool:
        """Read the server's messages until ``pending`` is answered (or the server failed).

        One call reads at a time; the others wait to be answered or handed the reading.
        """
        deadline = time.monotonic() + seconds
        while pending.answer is None and self.failure is None:
            if self._reading.acquire(blocking=False):
                try:
                    self._read_for(pending, deadline)
                finally:
                    self._reading.release()
                    self._hand_on(pending)
                if time.monotonic() >= deadline:
                    break
            elif pending.done.wait(max(0.0, deadline - time.monotonic())):
                pending.done.clear()  # answered, failed, or handed the reading: looked at above
            else:
                break
        return pending.answer is not None or self.failure is not None

    def _hand_on(self, done: Pending) -> None:
        """Wake a call still waiting for its answer: it reads from here on."""
        with self._lock:
            waiting = next(
                (p for p in self._pending.values() if p is not done and p.answer is None), None
            )
        if waiting is not None:
            waiting.done.set()

    def _read_for(self, pending: Pending, deadline: float) -> None:
        """Deliver the server's messages until ``pending``'s answer, a failure, or ``deadline``."""
        while pending.answer is None and self.failure is None:
            line = self._line(deadline)
            if line is None:
                return
            if not line.strip():
                continue
            try:
                message = json.loads(line)
            except ValueError:
                text = line.decode("utf-8", "replace").strip()
                return self.fail(
                    f"MCP server {self.name!r} answered malformed JSON-RPC: {cut(text)}"
                )
            self._deliver(message)

    def _line(self, deadline: float) -> bytes | None:
        """The server's next line (at most ``max_message`` bytes); None if there is none.

        None at ``deadline``, once the server failed, and at the end of its stdout
        (then it failed: it exited). A longer line is its failure, refused unread.
        """
        assert self._process is not None
        assert self._process.stdout is not None
        while (end := self._buffer.find(b"\n")) < 0 and len(self._buffer) <= self._max:
            left = deadline - time.monotonic()
            ready = self._poller.poll(max(0, int(left * 1000) + 1)) if left > 0 else []
            if not ready or any(fd == self._wake_r for fd, _ in ready):
                return None
            chunk = os.read(self._process.stdout.fileno(), 65536)
            if not chunk:
                self._exited(deadline - time.monotonic())
                return None
            self._buffer += chunk
        if end < 0 or end > self._max:
            self.fail(
                f"MCP server {self.name!r} sent a message over {self._max:,} bytes "
                "(its max_message_bytes): refused unread"
            )
            return None
        line = bytes(self._buffer[: end + 1])
        del self._buffer[: end + 1]
        return line

    def _exited(self, within: float) -> bool:
        """The server closed its stdio: it failed as it exited, its last words on stderr.

        False if it runs on ``within`` seconds later (then it has not failed yet).
        """
        assert self._process is not None
        if self._closing:  # (its calls were told why already, if any waits)
            self.fail(f"MCP server {self.name!r} was stopped", stop=False)
            return True
        try:
            code = self._process.wait(max(0.0, within))
        except subprocess.TimeoutExpired:
            return False
        self._threads[0].join(timeout=1)  # its last words on stderr, read to the end
        said = f": {self._stderr[-1]}" if self._stderr else ""
        self.fail(f"MCP server {self.name!r} exited (code {code}){said}")
        return True

    def _watch(self) -> None:
        """Stop the server once it holds more than the trial's caps, as its failure."""
        assert self._process is not None
        assert self._wall is not None
        while self._process.poll() is None and not self._closing:
            why = self._wall.over(self._process.pid)
            if why is not None:
                return self.fail(f"MCP server {self.name!r} {why}")
            time.sleep(0.1)

    def _drain(self) -> None:
        assert self._process is not None
        assert self._process.stderr is not None
        for line in self._process.stderr:
            if line.strip():
                self._stderr.append(line.decode("utf-8", "replace").strip()[:200])

    def _send(self, message: Message) -> None:
        assert self._process is not None
        assert self._process.stdin is not None
        data = json.dumps(message, separators=(",", ":"), default=str).encode() + b"\n"
        try:
            with self._write:
                self._process.stdin.write(data)
                self._process.stdin.flush()
        except (OSError, ValueError):  # (it exited while no call read its stdout)
            if not self._exited(EXIT_S):
                self.fail(f"MCP server {self.name!r} exited (code {self._process.poll()})")
            self._check()

    def _stopped(self) -> None:
        self._signal(signal.SIGKILL)  # hung or garbling: nothing more it says is trusted

    def _signal(self, which: signal.Signals) -> None:
        """Signal the server's whole process group (a wrapper's children too)."""
        if self._process is not None:
            with contextlib.suppress(OSError):
                os.killpg(self._process.pid, which)

    def close(self) -> None:
        """Close its stdin; then terminate its process group, then kill it, if it lingers."""
        self._closing = True
        process = self._process
        if process is None:
            self._close_wake()
            return
        with contextlib.suppress(OSError):
            if process.stdin is not None:
                process.stdin.close()
        for which in (None, signal.SIGTERM, signal.SIGKILL):
            if which is not None:
                self._signal(which)
            try:
                process.wait(timeout=2)
                break
            except subprocess.TimeoutExpired:
                continue
        self._signal(signal.SIGKILL)  # what the server left behind in its group
        for thread in self._threads:
            thread.join(timeout=2)
        self._walls.close()
        self._wake()  # a call still reading stops
        if not self._reading.acquire(timeout=2):
            return  # (a reader still in its stdout holds it)
        try:
            if not any(thread.is_alive() for thread in self._threads) and process.stderr:
                process.stderr.close()
            if process.stdout is not None:
                process.stdout.close()
            self._close_wake()
        finally:
            self._reading.release()

    def _close_wake(self) -> None:
        with self._lock:  # (a late ``fail`` must not write to a number reused since)
            fds, self._wake_r, self._wake_w = (self._wake_r, self._wake_w), -1, -1
        for fd in fds:
            if fd >= 0:
                with contextlib.suppress(OSError):
                    os.close(fd)
