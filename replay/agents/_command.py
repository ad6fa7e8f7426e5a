"""An agent that is a program: ``replay run --agent-cmd "node agent.js"``, in any language.

The program reads the instruction on stdin and writes its final answer to
stdout. Its environment is built, never copied: the harness's ``PATH``,
``HOME`` and locale, and ``env.variables()`` (the trial's LLM through the
recording proxy as ``OPENAI_BASE_URL``/``ANTHROPIC_BASE_URL``, its tools over
MCP as ``REPLAY_MCP_URL``/``REPLAY_MCP_COMMAND``, each third-party server's
proxy, the model and the settings). Everything it does with the LLM and the
tools is recorded, and replayed, as an in-process agent's is.
"""

from __future__ import annotations

import contextlib
import json
import os
import shlex
import signal
import subprocess
import sys
import tempfile
import threading
import time
from dataclasses import dataclass
from typing import Any, ClassVar, Literal

from recorder import ConfigError, ReplayError

from ..mcp import SAFE_ENV
from ..modes import Environment, LimitExceeded
from . import _zygote
from ._bwrap import hidden_roots
from ._isolation import Caps, Walls, read_given
from ._memory import usage
from ._zygote import kept_end

TIMEOUT_S = 600.0
"""Seconds the program may run before it is stopped and the trial is an error
(``--trial-timeout``)."""


class AgentCommandFailed(ReplayError):
    """The agent's program could not start, or exited with an error.

    Attributes:
        stderr: The end of what it wrote on stderr (``STDERR_KEPT`` characters), kept
            with the trial's recorded error (``recorder.error_info``), "" if nothing.
    """

    def __init__(self, message: str, stderr: str = "") -> None:
        super().__init__(message)
        self.stderr = stderr


@dataclass(frozen=True)
class AgentCommand:
    """An agent run as a program (``argv``), for each trial.

    Attributes:
        argv: The program and its arguments.
        timeout: Seconds it may run.
    """

    argv: tuple[str, ...]
    timeout: float = TIMEOUT_S
    isolation: Literal["none", "process"] = "none"
    """``process``: inside walls (``replay.agents._isolation``: its own network,
    processes and a read-only filesystem); ``none``: a plain child of the harness."""
    memory_mb: int | None = None
    """Megabytes its processes may hold together (resident, checked every 0.1 s:
    ``--trial-memory``), walled with what it stores in its private ``/tmp``,
    ``/dev/shm``...; past it, they are stopped and the trial is an error."""
    tasks: int | None = None
    """Processes and threads it may run at once, walled (``--trial-pids``); at it,
    no more start, and the trial is an error."""
    writable: tuple[str, ...] = ()
    """Folders it may write inside the walls (besides its private ``/tmp``)."""
    extra: tuple[tuple[str, str], ...] = ()
    """Variables given besides ``env.variables()``."""
    allow_hosts: tuple[tuple[str, int], ...] = ()
    """``(host, port)`` it may reach inside the walls besides the trial's endpoints
    (``--allow-host``: a name resolved and connected to from the harness)."""
    allow_env: tuple[str, ...] = ()
    """Variables of the harness's environment it is given (``--allow-env``); no other is."""
    own_deadline: ClassVar[bool] = True
    """It keeps its deadline itself (``replay.modes._guards``: not run under a second one)."""

    @property
    def caps(self) -> Caps:
        """What it may hold walled: its memory and tasks."""
        return Caps(self.memory_mb, self.tasks)

    @classmethod
    def parse(cls, line: str) -> AgentCommand:
        """A command line, split as a shell would.

        Raises:
            ConfigError: It is empty or cannot be split.
        """
        try:
            argv = tuple(shlex.split(line))
        except ValueError as exc:
            raise ConfigError(f"`agent.command` {line!r} cannot be split: {exc}") from None
        if not argv:
            raise ConfigError("`agent.command` is empty: give the program to run")
        return cls(argv)

    def __call__(self, instruction: str, env: Environment) -> str:
        """Run the program on ``instruction``; its stdout is the answer.

        Raises:
            AgentCommandFailed: It could not start, or exited non-zero.
            LimitExceeded: It ran past its deadline (guard ``timeout``) or held more
                memory than its cap (``memory``), and was stopped.
        """
        walled = self.isolation == "process"
        if walled and _zygote.supported() and not (self.writable or self.extra):
            shown = shlex.join(self.argv)
            done = _forked(
                "-", instruction, env, self.allow_env, self.allow_hosts, self.timeout,
                self.caps, f"the agent command `{shown}`", self.argv,
            )  # fmt: skip
            if done.code != 0:
                last = f": {done.said}" if done.said else ""
                raise AgentCommandFailed(
                    f"the agent command `{shown}` exited with code {done.code}{last}", done.stderr
                )
            return done.stdout.strip()
        names = (*SAFE_ENV, *self.allow_env)
        inherited = {k: os.environ[k] for k in names if k in os.environ}
        variables = env.variables() | dict(self.extra)
        rec = env._recording
        hosts = _ignored(rec)
        walls_of = (
            Walls(variables, self.writable, rec, hosts, self.allow_hosts, caps=self.caps)
            if walled
            else None
        )
        with walls_of if walls_of is not None else contextlib.nullcontext() as walls:
            return self._run(instruction, inherited | variables, walls)

    def _run(self, instruction: str, environ: dict[str, str], walls: Walls | None) -> str:
        shown = shlex.join(self.argv)
        try:
            process = subprocess.Popen(
                walls.argv(self.argv) if walls is not None else self.argv,
                stdin=subprocess.PIPE,
                stdout=subprocess.PIPE,
                stderr=subprocess.PIPE,
                env=environ,
                start_new_session=True,  # its children are stopped with it
            )
        except OSError as exc:
            raise AgentCommandFailed(f"the agent command `{shown}` did not start: {exc}") from None
        over: list[tuple[str, str]] = []
        caps = self.caps if walls is not None else Caps(self.memory_mb)
        if caps.memory_mb or caps.tasks:
            private = hidden_roots() if walls is not None else []
            watching = (process, caps, private, over)
            threading.Thread(target=_watch, args=watching, daemon=True).start()
        out, err = _Drained(process.stdout), _Drained(process.stderr)
        threading.Thread(  # (in a thread: a program may never read its instruction)
            target=_give, args=(process.stdin, instruction.encode()), daemon=True
        ).start()
        try:
            process.wait(timeout=self.timeout)
            late = False
        except subprocess.TimeoutExpired:
            late = True
        # What it left behind in its group (a background child holding stdout) goes with it;
        # a child that left the group (setsid) is only contained by walls.
        with contextlib.suppress(OSError):
            os.killpg(process.pid, signal.SIGKILL)
        process.wait()
        answer, said = out.text(), err.text()
        if late:
            raise LimitExceeded(
                f"the agent command `{shown}` did not finish within its deadline of "
                f"{self.timeout:g} s (--trial-timeout)",
                guard="timeout",
            )
        if over:
            guard, why = over[0]
            raise LimitExceeded(f"the agent command `{shown}` {why}, and was stopped", guard=guard)
        if process.returncode != 0:
            lines = [line for line in said.splitlines() if line.strip()]
            last = f": {lines[-1].strip()[:300]}" if lines else ""
            raise AgentCommandFailed(
                f"the agent command `{shown}` exited with code {process.returncode}{last}",
                kept_end(said),
            )
        return answer.strip()


OUTPUT_CAP = 10 * 2**20
"""Bytes of a program's stdout (its answer) and stderr kept; the rest is read and dropped."""


def _give(stream: Any, data: bytes) -> None:
    with contextlib.suppress(OSError):
        stream.write(data)
        stream.close()


class _Drained:
    """A program's output read to its end in a thread, the first ``OUTPUT_CAP`` bytes kept."""

    def __init__(self, stream: Any) -> None:
        self._kept = bytearray()
        self._thread = threading.Thread(target=self._read, args=(stream,), daemon=True)
        self._thread.start()

    def _read(self, stream: Any) -> None:
        with contextlib.suppress(OSError, ValueError):
            while data := stream.read1(65536):
                if len(self._kept) < OUTPUT_CAP:
                    self._kept += data[: OUTPUT_CAP - len(self._kept)]
        with contextlib.suppress(OSError):
            stream.close()

    def text(self) -> str:
        """What was kept, decoded (undecodable bytes replaced).

        Once the stream has ended, or 2 s after its program did (a detached child may
        hold it open).
        """
        self._thread.join(timeout=2)
        return bytes(self._kept).decode("utf-8", "replace")


def _watch(
    process: subprocess.Popen[str], caps: Caps, private: list[str], over: list[tuple[str, str]]
) -> None:
    """Stop ``process``'s session once its processes are past ``caps`` (``Usage.over``)."""
    while process.poll() is None:
        held = usage(process.pid, private, caps.memory_mb)
        why = held.over(caps.memory_mb, caps.tasks)
        if why is not None:
            over.append(("pids" if "--trial-pids" in why else "memory", why))
            with contextlib.suppress(OSError):
                os.killpg(process.pid, signal.SIGKILL)
            return
        time.sleep(0.1)


class AgentFailed(ReplayError):
    """A Python agent in a process of its own raised: recorded as what it raised."""

    def __init__(self, kind: str, message: str) -> None:
        super().__init__(f"{kind}: {message}")
        self.replayed = (kind, message)
        """Recorded as the agent's own exception (``recorder.error_info``)."""


@dataclass(frozen=True)
class ChildAgent:
    """A Python agent (``module:function``) run in a process of its own (``_child``).

    Attributes:
        entry: The agent, ``module:function``, imported in the child.
        timeout: Seconds it may run.
        isolation: ``process``: inside walls; ``none``: a plain child.
    """

    entry: str
    timeout: float = TIMEOUT_S
    isolation: Literal["none", "process"] = "process"
    memory_mb: int | None = None
    allow_hosts: tuple[tuple[str, int], ...] = ()
    allow_env: tuple[str, ...] = ()
    tasks: int | None = None
    own_deadline: ClassVar[bool] = True
    """It keeps its deadline itself, as its child's ``AgentCommand``."""

    @property
    def caps(self) -> Caps:
        """What it may hold walled: its memory and tasks."""
        return Caps(self.memory_mb, self.tasks)

    def __call__(self, instruction: str, env: Environment) -> Any:
        """Run the agent in the child; return what it returned.

        Raises:
            AgentFailed: The agent raised (its type and message).
            AgentCommandFailed: The child itself failed (could not start, said nothing).
            LimitExceeded: The child ran past its deadline or over its memory cap.
        """
        if self.isolation == "process" and _zygote.supported():
            outcome = self._forked(instruction, env)
        else:
            outcome = self._started(instruction, env)
        if "error" in outcome:
            raise AgentFailed(str(outcome["error"]["type"]), str(outcome["error"]["message"]))
        return outcome.get("answer")

    def _forked(self, instruction: str, env: Environment) -> dict[str, Any]:
        """Run it in a child forked from a zygote that imported it once (``_zygote``)."""
        done = _forked(
            self.entry, instruction, env, self.allow_env, self.allow_hosts, self.timeout,
            self.caps, f"the agent {self.entry}",
        )  # fmt: skip
        if done.outcome is None:
            last = f": {done.said}" if done.said else ""
            raise AgentCommandFailed(f"the agent {self.entry} said nothing{last}", done.stderr)
        return done.outcome

    def _started(self, instruction: str, env: Environment) -> dict[str, Any]:
        """Run it in a child of its own (``python -m replay.agents._child``)."""
        with tempfile.TemporaryDirectory(prefix="replay-answer-") as box:
            answer = os.path.join(box, "answer.json")
            AgentCommand(
                (sys.executable, "-m", "replay.agents._child", self.entry),
                self.timeout,
                self.isolation,
                self.memory_mb,
                writable=(box,),
                extra=(("REPLAY_ANSWER", answer),),
                allow_hosts=self.allow_hosts,
                allow_env=self.allow_env,
                tasks=self.tasks,
            )(instruction, env)
            try:
                outcome = json.loads(read_given(answer) or b"null")
            except ValueError:
                outcome = None
            if not isinstance(outcome, dict):
                raise AgentCommandFailed(f"the agent {self.entry} said nothing")
        return outcome


def _ignored(rec: Any) -> set[str]:
    """The hosts the trial ignores (its own list and the frozen recording's)."""
    hosts = set() if rec is None else set(rec.ignore_hosts.hosts)
    if rec is not None and rec.hooks.source is not None:
        hosts |= rec.hooks.source.ignore_hosts.hosts
    return hosts


def _forked(
    entry: str,
    instruction: str,
    env: Environment,
    allow_env: tuple[str, ...],
    allow_hosts: tuple[tuple[str, int], ...],
    timeout: float,
    caps: Caps,
    named: str,
    program: tuple[str, ...] | None = None,
) -> _zygote.Finished:
    """One trial forked from a zygote of ``entry`` (``-`` and ``program``: a program's)."""
    names = (*SAFE_ENV, *allow_env)
    environ = {k: os.environ[k] for k in names if k in os.environ}
    rec = env._recording
    try:
        key, zygote = _zygote.take(entry, environ, program or (), caps)
    except _zygote.ZygoteFailed as exc:
        raise AgentCommandFailed(str(exc)) from None
    try:
        return zygote.run(
            instruction, env.variables(), rec, sorted(_ignored(rec)), allow_hosts, timeout,
            program,
        )  # fmt: skip
    except _zygote.ZygoteFailed as exc:
        if exc.guard is not None:
            raise LimitExceeded(f"{named} {exc}", guard=exc.guard) from None
        raise AgentCommandFailed(f"{named} {exc}") from None
    finally:
        _zygote.give(key, zygote)
