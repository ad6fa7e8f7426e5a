"""An agent program in a process of its own behind walls: ``--isolation process``.

With bubblewrap (``bwrap``, Debian's package) the program gets its own
network, PID, IPC and mount namespaces:

- **network**: only a loopback of its own. ``_forward.py`` listens there on
  the ports of the trial's endpoints (the recording LLM proxy, the MCP tool
  servers and proxies), each piped over a Unix socket to a bridge here that
  reaches the endpoint on the harness's loopback: the addresses in its
  environment work unchanged, and nothing else is reachable, on any address
  or port (no route, no DNS). The relays of ``*_COMMAND`` hand their stdio
  over Unix sockets bound in too.
- **files**: a root filesystem built from what the trial needs
  (``_bwrap``: the system's programs and libraries, a few files of ``/etc``,
  the interpreter, the harness's packages, the agent's code), nothing of the
  store, the project's other files or other users'; ``/tmp``, ``/var/tmp``,
  ``/run``, ``/dev/shm`` and the home folder private tmpfs sized under the
  trial's memory cap; a fresh ``/proc`` that shows its own processes only
  (none of the harness's memory or environment);
- **user**: the agent's (``_seccomp.unprivileged``: uid 1000 in a user
  namespace of its own, no capability, its processes counted there);
- **environment**: built by the caller from an allow-list, never copied.

Every attempt to reach anything else is refused there and, as it is made,
reported to the trial's recording as a sandbox violation (``_seccomp``: a
seccomp filter on the program, its supervisor here).

Where bubblewrap or user namespaces are missing, asking for it is a
one-line ``ConfigError`` saying why.
"""

from __future__ import annotations

import contextlib
import ipaddress
import os
import re
import shutil
import socket
import stat
import sys
import tempfile
import threading
from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from types import TracebackType
from typing import Protocol

from recorder import ConfigError

from . import _seccomp, _supervisor
from ._bwrap import sandbox_argv, write_names
from ._forward import splice

FORWARD = str(Path(__file__).with_name("_forward.py"))
ENDPOINTS = ("OPENAI_BASE_URL", "ANTHROPIC_BASE_URL", "REPLAY_MCP_", "REPLAY_USER_URL")
"""The variables that hold the trial's endpoints (the ports bridged, the sockets bound)."""
_PORTS = re.compile(r"https?://127\.0\.0\.1:(\d+)")
_SOCKETS = re.compile(r"unix:([^\"\s,\]]+)")


class Sink(Protocol):
    """Where the walls report what they refused (a trial's ``Recording``)."""

    def violation(self, action: str, target: str, via: str) -> None:
        """The agent tried to reach ``target`` and was refused."""

    def warn(self, message: str) -> None:
        """Something could not be watched."""


KEPT_PER_TARGET, KEPT = 20, 500
"""Violations recorded for one target, and in all, per trial (an agent in a loop of
refused calls does not fill the cassette); the grade fails on the first."""
NSCD = ("/var/run/nscd/socket", "/run/nscd/socket")
"""glibc asks its name-service cache first on every name lookup: not the agent's reach
(hidden inside all the same); the lookup that follows is."""


@dataclass(frozen=True)
class Caps:
    """What a walled trial may hold: ``--trial-memory`` and ``--trial-pids``.

    Attributes:
        memory_mb: Megabytes its processes hold and its private tmpfs store, together
            (``_bwrap.tmpfs_sizes``: the tmpfs add up to it); None: no cap.
        tasks: Processes and threads it may have at once; None: no limit.
    """

    memory_mb: int | None = None
    tasks: int | None = None


class Walls:
    """The walls around one run of an agent program, given its environment.

    Use as a context manager: ``argv(program)`` is the command to run inside.
    With a ``sink``, every attempt to reach anything but the trial's endpoints
    is refused and reported to it as it is made (``_seccomp``).
    """

    def __init__(
        self,
        variables: Mapping[str, str],
        writable: Sequence[str] = (),
        sink: Sink | None = None,
        ignored_hosts: Iterable[str] = (),
        allow: Sequence[tuple[str, int]] = (),
        root: str | None = None,
        caps: Caps | None = None,
    ) -> None:
        # The endpoints' variables alone: a --set value naming a port is no endpoint.
        text = " ".join(v for k, v in variables.items() if k.startswith(ENDPOINTS))
        self._ports = sorted({int(p) for p in _PORTS.findall(text)})
        sockets = set(_SOCKETS.findall(text))
        self._binds = sorted({os.path.dirname(p) for p in sockets} | set(writable))
        self._sockets = frozenset(sockets) | frozenset(NSCD)
        self._sink = sink
        self._root = root
        self._caps = caps or Caps()
        self._ignored = frozenset(h.lower() for h in ignored_hosts)
        # Allowed hosts: a loopback port of the harness's is bridged as the endpoints are; a
        # name gets an address of its own inside (the resolver answers it), bridged to the name.
        self._allow = list(dict.fromkeys(allow))
        names = sorted({h for h, _ in self._allow if h != "127.0.0.1"})
        self._names = {name: f"127.0.1.{i + 1}" for i, name in enumerate(names)}
        self._reachable = {("127.0.0.1", p) for p in self._ports} | {
            (self._names.get(h, "127.0.0.1"), p) for h, p in self._allow
        }
        self._dir = self._names_dir = ""
        self._bridges: list[_Bridge] = []
        self._control: socket.socket | None = None
        self._supervisor: _supervisor.Supervisor | None = None
        self._watcher: threading.Thread | None = None
        self._lock = threading.Lock()
        self._seen: dict[tuple[str, str], int] = {}

    def __enter__(self) -> Walls:
        self._dir = tempfile.mkdtemp(prefix="replay-walls-", dir=self._root)
        self._names_dir = tempfile.mkdtemp(prefix="replay-names-")  # (not seen inside)
        self._bridges = [
            _Bridge("127.0.0.1", port, os.path.join(self._dir, f"{port}")) for port in self._ports
        ]
        for i, (host, port) in enumerate(self._allow):
            inside = self._names.get(host, "127.0.0.1")
            self._bridges.append(_Bridge(host, port, os.path.join(self._dir, f"allow-{i}"), inside))
        if self._sink is not None:
            if _seccomp.supported():
                self._control = socket.socket(socket.AF_UNIX)
                self._control.bind(os.path.join(self._dir, "control"))
                self._control.listen(1)
                self._watcher = threading.Thread(
                    target=self._watch, name="replay-walls", daemon=True
                )
                self._watcher.start()
            else:
                self._sink.warn(
                    f"sandbox violations are not recorded on {os.uname().machine} "
                    "(no seccomp filter for it): they are refused all the same"
                )
        return self

    def _watch(self) -> None:
        """Take the filter's listener from the forwarder (the first to connect), and serve it."""
        assert self._control is not None
        assert self._sink is not None
        try:
            conn, _ = self._control.accept()
        except OSError:
            return  # closed: the program never started
        self._control.close()  # one forwarder, once: no one else hands us a filter
        sink = self._sink
        with conn:
            try:
                said, fds, _, _ = socket.recv_fds(conn, 512, 1)
            except OSError:
                return
            if fds:
                self._supervisor = _supervisor.Supervisor(
                    fds[0], self._allowed, lambda a: self._violation(a.action, a.target)
                )
            for raw in _lines(conn, said):
                line = raw.decode("utf-8", "replace").strip()
                if line.startswith("unavailable: "):
                    sink.warn(
                        f"sandbox violations are not all recorded here "
                        f"({line.removeprefix('unavailable: ')}): they are refused all the same"
                    )
                elif line.startswith("dns ") and not self._quiet(line[4:].lower().rstrip(".")):
                    self._violation("dns", line[4:])

    def _violation(self, action: str, target: str) -> None:
        """Record one, up to ``KEPT_PER_TARGET`` of each and ``KEPT`` in all (then say so)."""
        assert self._sink is not None
        with self._lock:
            seen = self._seen.get((action, target), 0)
            self._seen[(action, target)] = seen + 1
            total = sum(self._seen.values())
        if seen < KEPT_PER_TARGET and total <= KEPT:
            self._sink.violation(action, target, "walls")
        elif total == KEPT + 1:
            self._sink.warn(f"more than {KEPT} sandbox violations: the rest are not recorded")

    def _quiet(self, name: str) -> bool:
        """An allowed host, or one the trial ignores (a tracing endpoint's): no violation."""
        return name in self._ignored or name in self._names

    def _allowed(self, attempt: _supervisor.Attempt) -> bool:
        """Whether a trapped call aims at one of the trial's endpoints (or at nothing)."""
        if attempt.family in ("netlink", "unspec"):
            return True  # a route lookup, a datagram socket's disconnect: no reach
        if attempt.family == "inet":  # an endpoint, an allowed host, or the resolver
            where = (attempt.host, attempt.port)
            return where in self._reachable or where == ("127.0.0.1", 53)
        if attempt.family == "file":  # (one to a read-only mount: a rw one is not trapped)
            return False
        if attempt.family == "unix":
            path = attempt.host
            return path in self._sockets or (
                os.path.dirname(path) == self._dir and not path.endswith("/control")
            )
        return False

    def __exit__(
        self,
        kind: type[BaseException] | None,
        exc: BaseException | None,
        trace: TracebackType | None,
    ) -> None:
        if self._control is not None:
            with contextlib.suppress(OSError):
                self._control.shutdown(socket.SHUT_RDWR)
            self._control.close()
        if self._watcher is not None:  # the names looked up last, told before the program ended
            self._watcher.join(timeout=2)
        if self._supervisor is not None:
            self._supervisor.close()
        for bridge in self._bridges:
            bridge.close()
        shutil.rmtree(self._dir, ignore_errors=True)
        shutil.rmtree(self._names_dir, ignore_errors=True)

    def argv(self, program: Sequence[str]) -> list[str]:
        """``program`` inside the walls (its working directory: this one, read-only)."""
        watched = self._control is not None
        write_names(self._names_dir, self._names)
        forwards = self.forwards()
        if watched:
            forwards[:0] = ["--control", self.control]
        if self._caps.tasks:
            forwards[:0] = ["--tasks", str(self._caps.tasks)]
        sandbox = sandbox_argv(
            program, [self._dir, *self._binds], self._names_dir, watched,
            memory_mb=self._caps.memory_mb,
        )  # fmt: skip
        return [*sandbox, sys.executable, "-I", "-S", FORWARD, *forwards, "--", *program]

    @property
    def folder(self) -> str:
        """This trial's folder (its bridges' sockets, its filter's; visible inside)."""
        return self._dir

    @property
    def control(self) -> str:
        """The Unix socket the program's filter is handed to (and names are reported on)."""
        assert self._control is not None
        return str(self._control.getsockname())

    @property
    def names(self) -> dict[str, str]:
        """The allowed hosts' names and their addresses inside."""
        return dict(self._names)

    def forwards(self) -> list[str]:
        """What the forwarder inside listens on: ``[ADDRESS:]PORT=SOCKET`` and ``--name=``."""
        forwards = [b.forward for b in self._bridges]
        return forwards + [f"--name={name}={address}" for name, address in self._names.items()]

    def linked(self, variables: Mapping[str, str]) -> dict[str, str]:
        """``variables`` with each Unix socket named there linked into this walls' folder.

        For a sandbox made before the trial (a zygote's): it sees this folder,
        not the folders the trial's endpoints made their sockets in. A hard
        link to a socket is the same socket.
        """
        out = dict(variables)
        for i, path in enumerate(sorted(self._sockets - frozenset(NSCD))):
            link = os.path.join(self._dir, f"socket-{i}")
            os.link(path, link)
            out = {k: v.replace(f"unix:{path}", f"unix:{link}") for k, v in out.items()}
        return out


def _lines(conn: socket.socket, first: bytes) -> Iterator[bytes]:
    """The lines of ``first`` and of what follows on ``conn`` (a read may end mid-line)."""
    pending = first
    while True:
        *whole, pending = pending.split(b"\n")
        yield from whole
        try:
            more = conn.recv(65536)
        except OSError:
            more = b""
        if not more:
            if pending:
                yield pending
            return
        pending += more


def read_given(path: str, cap: int = 10 * 2**20) -> bytes:
    """What a sandbox left at ``path`` (a file in a folder it can write): at most ``cap`` bytes.

    Never through a link it planted, from a FIFO or a device (``O_NOFOLLOW``,
    ``O_NONBLOCK``, a regular file only): b"" for anything else.
    """
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC)
    except OSError:
        return b""
    try:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            return b""
        chunks, left = [], cap
        while left > 0 and (chunk := os.read(fd, min(left, 2**20))):
            chunks.append(chunk)
            left -= len(chunk)
        return b"".join(chunks)
    except OSError:
        return b""
    finally:
        os.close(fd)


def allowed_host(text: str) -> tuple[str, int]:
    """``HOST[:PORT]`` (``agent.allow_hosts``) as (host, port): port 443 when none is given.

    ``localhost`` is 127.0.0.1 (a port of the harness's own machine). Inside the
    walls a name is answered by the sandbox's resolver with an address of its own,
    bridged to the name; an address is not routed there, so another machine is
    allowed by its name only.

    Raises:
        ConfigError: It is not ``HOST[:PORT]``, or is the address of another machine.
    """
    host, port = text.strip(), 443
    head, colon, tail = host.rpartition(":")
    if colon and tail.isdigit() and (head.endswith("]") or ":" not in head):
        host, port = head, int(tail)
    host = host.strip("[]").lower()
    if host == "localhost":
        host = "127.0.0.1"
    try:
        address = ipaddress.ip_address(host)
    except ValueError:
        address = None
    if address is not None and not address.is_loopback:
        raise ConfigError(
            f"`agent.allow_hosts` {text!r}: inside the walls another machine is reached by its "
            "name, not its address (give the host name)"
        )
    if address is not None:
        host = "127.0.0.1"
    if not host or not 0 < port < 65536 or any(c in host for c in "/@ :"):
        raise ConfigError(
            f"`agent.allow_hosts` {text!r} is not HOST[:PORT] (e.g. api.internal:8443)"
        )
    return host, port


class _Bridge:
    """A Unix socket here whose every connection is piped to ``host:port``.

    ``inside`` is the address the forwarder listens on in the sandbox for it.
    """

    def __init__(self, host: str, port: int, path: str, inside: str = "127.0.0.1") -> None:
        self.host, self.port, self.path, self.inside = host, port, path, inside
        self._listener = socket.socket(socket.AF_UNIX)
        self._listener.bind(path)
        self._listener.listen(64)
        threading.Thread(target=self._serve, name="replay-walls", daemon=True).start()

    @property
    def forward(self) -> str:
        """The forwarder's argument for it: ``[ADDRESS:]PORT=SOCKET``."""
        where = "" if self.inside == "127.0.0.1" else f"{self.inside}:"
        return f"{where}{self.port}={self.path}"

    def _serve(self) -> None:
        while True:
            try:
                conn, _ = self._listener.accept()
            except OSError:
                return  # closed
            if self.host == "127.0.0.1":
                self._connect(conn)
            else:  # (an allowed host's name to resolve, its connect to wait for: not here)
                threading.Thread(target=self._connect, args=(conn,), daemon=True).start()

    def _connect(self, conn: socket.socket) -> None:
        try:
            there = socket.create_connection((self.host, self.port), timeout=30)
        except OSError:
            conn.close()
            return
        there.settimeout(None)
        there.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        splice(conn, there)

    def close(self) -> None:
        """Stop listening."""
        with contextlib.suppress(OSError):
            self._listener.shutdown(socket.SHUT_RDWR)
        self._listener.close()
