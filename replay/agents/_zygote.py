"""Walled agents, started once: a zygote per agent that forks each trial.

A walled Python agent (``--agent MOD:FN --isolation process``) would pay its
interpreter's start and its imports (a framework: seconds) on every trial,
and any walled trial bubblewrap's namespaces and the forwarder's start.
A ``Zygote`` is one sandbox (``_bwrap.sandbox_argv``: its own network,
processes, a read-only filesystem) running ``python -m replay.agents._child
--serve SOCKET MOD:FN``: it imports the agent once, then for each trial the
harness sends it (the trial's forwards, allowed names, filter socket,
environment and instruction) it

- listens on the trial's endpoint ports (bridged to the harness, ``Walls``),
- forks a child that drops every capability, installs the seccomp filter
  (its listener handed to the trial's supervisor: violations recorded as in
  ``Walls``), takes the trial's environment and runs the agent, its outcome
  to the trial's answer file (``_child.run``), or execs the agent's program
  (``--agent-cmd``: a zygote of entry ``-``, its instruction on stdin),
- waits for it (stopping it past ``--trial-memory``), stops every other
  process of the sandbox (what the trial left running, in its group or not),
  closes the trial's ports and empties ``/tmp``: the next trial starts from
  the zygote as it was after the import, with nothing of this one.

A zygote runs one trial at a time; concurrent trials take one each from the
pool (``_POOL``), made on demand and kept until the process exits. One that
runs past a trial's deadline is stopped, and the next trial makes a new one.
What the agent's module does when imported runs once, in the zygote, walled
but not watched (no trial's violations to record it in).
"""

from __future__ import annotations

import atexit
import contextlib
import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from typing import Any

from recorder import ReplayError

from . import _seccomp
from ._bwrap import (
    hidden_roots,
    python_paths,
    sandbox_argv,
    shown_paths,
    visible,
    write_names,
)
from ._isolation import Caps, Sink, Walls, read_given

READY_S = 120.0
"""Seconds a zygote may take to import its agent."""


class ZygoteFailed(ReplayError):
    """A zygote could not start, import its agent, or answer; or its trial hit a limit.

    Attributes:
        guard: The limit (``timeout``, ``memory``), or None.
    """

    def __init__(self, message: str, guard: str | None = None) -> None:
        super().__init__(message)
        self.guard = guard


@dataclass(frozen=True)
class Finished:
    """How a zygote's trial ended.

    Attributes:
        code: The child's exit code.
        outcome: A Python agent's outcome (``_child.run``), None for a program or if it
            said nothing.
        stdout: What it wrote on stdout (a program's answer).
        said: Its last line on stderr.
        stderr: The end of its stderr (``STDERR_KEPT`` characters).
    """

    code: int
    outcome: dict[str, Any] | None
    stdout: str
    said: str
    stderr: str = ""


STDERR_KEPT = 64 * 1024
"""Characters of a failed program's stderr kept with its error (its end: the cause)."""


def kept_end(text: str) -> str:
    """The end of a program's stderr kept with its error: ``STDERR_KEPT`` characters at most.

    It starts at a line's start: a line cut in two could hold part of a secret that no
    scrubbing (of whole values) would find.
    """
    if len(text) <= STDERR_KEPT:
        return text
    return text[-STDERR_KEPT:].partition("\n")[2]


def _text(path: str) -> str:
    return read_given(path).decode("utf-8", "replace")


class _Quiet:
    """A sink for a trial without a recording: nothing to record in."""

    def violation(self, action: str, target: str, via: str) -> None:
        """Dropped."""

    def warn(self, message: str) -> None:
        """Dropped."""


class Zygote:
    """One walled process with ``entry`` imported, forking a child per trial."""

    def __init__(
        self,
        entry: str,
        environ: Mapping[str, str],
        shown: Sequence[str] = (),
        caps: Caps | None = None,
    ) -> None:
        self.environ = dict(environ)
        """What it was started with (``PATH``, ``HOME``, what ``--allow-env`` allows):
        each trial's child gets it too, under the trial's variables."""
        # Only ``rw`` is seen inside (read-write: the trials' folders, the zygote's socket);
        # what the harness writes or reads by name (its names files, its log) is not.
        self.dir = tempfile.mkdtemp(prefix="replay-zygote-")
        self.rw = os.path.join(self.dir, "rw")
        self._names = os.path.join(self.dir, "names")
        os.mkdir(self.rw)
        os.mkdir(self._names)
        write_names(self._names, {})
        path = os.path.join(self.rw, "zygote")
        listener = socket.socket(socket.AF_UNIX)
        listener.bind(path)
        listener.listen(1)
        self.caps = caps or Caps()
        # It imports the agent as the harness would, from this process's import path; what
        # is shown of it: the agent's own package (or a program's paths), the interpreter's.
        code = python_paths(entry) if entry != "-" else []
        given = shown_paths(list(shown) or [sys.executable], code)
        here = [p for p in dict.fromkeys([os.getcwd(), *sys.path]) if p and os.path.isdir(p)]
        here = [p for p in here if visible(p, given)]  # (a folder it lacks: looked for, a reach)
        program = [sys.executable, "-m", "replay.agents._child", "--serve", path, entry, *here]
        sandbox = sandbox_argv(
            list(shown) or [sys.executable], [self.rw], self._names, True, code,
            self.caps.memory_mb,
        )  # fmt: skip
        self._log = open(os.path.join(self.dir, "zygote.log"), "wb")  # noqa: SIM115
        try:
            # Started from a thread that lives as long as this process: bwrap's
            # --die-with-parent follows the thread that started it, and a trial's
            # thread ends with its run while its zygote waits in the pool.
            self._process = _SPAWNER.submit(
                subprocess.Popen,
                [*sandbox, *program],
                stdin=subprocess.DEVNULL,
                stdout=self._log,
                stderr=self._log,
                env=dict(environ),
                start_new_session=True,
            ).result()
        except OSError as exc:
            self.close()
            raise ZygoteFailed(f"the agent {entry} could not start walled in: {exc}") from None
        try:
            self._conn = self._accept(listener)
            self._lines = self._conn.makefile("rb")
            ready = self._reply(READY_S)
        except (OSError, ZygoteFailed):
            said = self._said()
            self.close()
            raise ZygoteFailed(f"the agent {entry} did not start walled in{said}") from None
        finally:
            listener.close()
        if "error" in ready:
            self.close()
            raise ZygoteFailed(f"the agent {entry} cannot be loaded: {ready['error']}")

    def _accept(self, listener: socket.socket) -> socket.socket:
        """The zygote's connection once it has started; an error at once if it ended first.

        (An interpreter that cannot find the harness, say: its log says why.)
        """
        deadline = time.monotonic() + READY_S
        listener.settimeout(0.1)
        while True:
            try:
                return listener.accept()[0]
            except TimeoutError:
                if self._process.poll() is not None:  # (it may have said why, and ended)
                    listener.setblocking(False)
                    with contextlib.suppress(BlockingIOError):
                        conn = listener.accept()[0]
                        conn.setblocking(True)
                        return conn
                    raise ZygoteFailed("the zygote ended") from None
                if time.monotonic() > deadline:
                    raise ZygoteFailed("the zygote did not start in time") from None

    def _reply(self, timeout: float) -> dict[str, Any]:
        self._conn.settimeout(timeout)
        line = self._lines.readline()
        if not line:
            raise ZygoteFailed("the zygote ended")
        try:
            reply = json.loads(line)
        except ValueError:
            reply = None
        if not isinstance(reply, dict):
            raise ZygoteFailed(f"the zygote answered {line[:80]!r}")
        return reply

    def _said(self) -> str:
        """The zygote's last line on its log naming an error (why it did not start), if any."""
        text = read_given(os.path.join(self.dir, "zygote.log")).decode(errors="replace")
        lines = [line for line in text.splitlines() if line.strip()]
        errors = [line for line in lines if "error" in line.lower()]  # (not a traceback's end)
        return f": {(errors or lines)[-1].strip()[:300]}" if lines else ""

    @property
    def alive(self) -> bool:
        """Whether it can take another trial."""
        return self._process.poll() is None

    def run(
        self,
        instruction: str,
        variables: Mapping[str, str],
        sink: Sink | None,
        ignored: Sequence[str],
        allow: Sequence[tuple[str, int]],
        timeout: float,
        program: Sequence[str] | None = None,
    ) -> Finished:
        """Run one trial: the zygote's agent, or ``program`` (instruction on its stdin).

        Raises:
            ZygoteFailed: It ran past ``timeout`` (the zygote is stopped), went past
                its ``caps``, or the zygote failed.
        """
        walls = Walls(variables, (), sink or _Quiet(), ignored, allow, root=self.rw)
        with walls:
            given = walls.linked(variables)
            answer = os.path.join(walls.folder, "answer.json")
            stdin, stdout, stderr = (os.path.join(walls.folder, n) for n in ("in", "out", "err"))
            with open(stdin, "w", encoding="utf-8") as given_in:
                given_in.write(instruction)
            write_names(self._names, walls.names)
            environ = {**self.environ, **given}  # (built, as its own was: never copied)
            if not program:
                environ["REPLAY_ANSWER"] = answer
            request = {
                "forward": walls.forwards(),
                "control": walls.control,
                "environ": environ,
                "instruction": instruction,
                "program": list(program) if program else None,
                "stdin": stdin,
                "stdout": stdout,
                "stderr": stderr,
                "memory_mb": self.caps.memory_mb,
                "tasks": self.caps.tasks,
                "hidden": hidden_roots(),
            }
            started = time.monotonic()
            try:
                self._conn.sendall(json.dumps(request).encode() + b"\n")
                reply = self._reply(timeout)
            except (TimeoutError, OSError, ZygoteFailed) as exc:
                late = time.monotonic() - started >= timeout - 0.05
                said = self._said()
                self.close()
                if late:
                    raise ZygoteFailed(
                        f"did not finish within its deadline of {timeout:g} s (--trial-timeout)",
                        "timeout",
                    ) from None
                raise ZygoteFailed(f"the zygote failed ({exc}){said}") from None
            tail = kept_end(_text(stderr))
            lines = [line for line in tail.splitlines() if line.strip()]
            said = lines[-1].strip()[:300] if lines else ""
            if reply.get("over"):
                guard, why = reply["over"]
                raise ZygoteFailed(f"{why}, and was stopped", str(guard))
            outcome = None
            with contextlib.suppress(ValueError):
                told = json.loads(read_given(answer) or b"null")
                outcome = told if isinstance(told, dict) else None
            return Finished(int(reply.get("code", -1)), outcome, _text(stdout), said, tail)

    def close(self) -> None:
        """Stop it (and whatever trial it runs)."""
        process = getattr(self, "_process", None)
        if process is not None:
            with contextlib.suppress(OSError):
                os.killpg(process.pid, signal.SIGKILL)
            process.wait()
        conn = getattr(self, "_conn", None)
        if conn is not None:
            conn.close()
        if hasattr(self, "_log"):
            self._log.close()
        shutil.rmtree(self.dir, ignore_errors=True)
        with _LOCK:
            _ALL.discard(self)


_SPAWNER = ThreadPoolExecutor(1, thread_name_prefix="replay-zygotes")
_POOL: dict[tuple[Any, ...], list[Zygote]] = {}
_LOCK = threading.RLock()  # (close() takes it too, under take())


def supported() -> bool:
    """Whether trials can be forked from zygotes here (the filter is written for this machine)."""
    return _seccomp.supported()


def take(
    entry: str, environ: Mapping[str, str], shown: Sequence[str] = (), caps: Caps | None = None
) -> tuple[tuple[Any, ...], Zygote]:
    """An idle zygote of ``entry`` (``-``: for programs, ``shown`` their command lines)."""
    caps = caps or Caps()
    key = (entry, os.getcwd(), tuple(sys.path), tuple(sorted(environ.items())), tuple(shown), caps)
    with _LOCK:
        idle = _POOL.setdefault(key, [])
        while idle:
            zygote = idle.pop()
            if zygote.alive:
                return key, zygote
            zygote.close()
    made = Zygote(entry, environ, shown, caps)
    with _LOCK:
        _ALL.add(made)
    return key, made


_ALL: set[Zygote] = set()
"""Every zygote alive, idle or not (stopped at exit)."""


def give(key: tuple[Any, ...], zygote: Zygote) -> None:
    """Return a zygote to the pool (a dead one is closed)."""
    if not zygote.alive:
        zygote.close()
        return
    with _LOCK:
        _POOL.setdefault(key, []).append(zygote)


@atexit.register
def close_all() -> None:
    """Stop every zygote."""
    with _LOCK:
        zygotes = list(_ALL)
        _ALL.clear()
        _POOL.clear()
    for zygote in zygotes:
        zygote.close()
