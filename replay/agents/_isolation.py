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
- **files**: the whole filesystem read-only (the store, the fixtures, the
  harness's code), with no capability left to remount it; ``/tmp``,
  ``/var/tmp``, ``/run``, ``/dev/shm`` and the home folder private and empty
  (other trials' files and sockets, services' sockets, the user's dotfiles),
  but for what the program needs from them; a fresh ``/proc`` that shows its
  own processes only (none of the harness's memory or environment).
- **environment**: built by the caller from an allow-list, never copied.

Every attempt to reach anything else is refused there and, as it is made,
reported to the trial's recording as a sandbox violation (``_seccomp``: a
seccomp filter on the program, its supervisor here).

Where bubblewrap or user namespaces are missing, asking for it is a
one-line ``ConfigError`` saying why.
"""

from __future__ import annotations

import contextlib
import functools
import ipaddress
import os
import re
import shutil
import socket
import stat
import subprocess
import sys
import tempfile
import threading
from collections.abc import Iterable, Iterator, Mapping, Sequence
from pathlib import Path
from types import TracebackType
from typing import Protocol

from recorder import ConfigError

from ..mcp import sdk_missing
from . import _seccomp, _supervisor
from ._forward import splice

FORWARD = str(Path(__file__).with_name("_forward.py"))
ENDPOINTS = ("OPENAI_BASE_URL", "ANTHROPIC_BASE_URL", "REPLAY_MCP_", "REPLAY_USER_URL")
"""The variables that hold the trial's endpoints (the ports bridged, the sockets bound)."""
HIDDEN = ("/tmp", "/var/tmp", "/run", "/var/run", "/dev/shm", os.path.expanduser("~"))
"""Where other trials, services and the user keep their files and sockets: empty inside
(a private tmpfs each), but for what the program needs (``_shown``)."""
_PORTS = re.compile(r"https?://127\.0\.0\.1:(\d+)")
_SOCKETS = re.compile(r"unix:([^\"\s,\]]+)")


@functools.cache
def unavailable() -> str | None:
    """Why isolation cannot run here, or None when it can (asked once a process)."""
    missing = sdk_missing()
    if missing is not None:  # a walled agent's tools are served to it over MCP
        return (
            f"a walled agent reaches its tools over MCP, and the mcp SDK is missing ({missing}): "
            "pip install 'agent-replay[mcp]'"
        )
    if shutil.which("bwrap") is None:
        return "bubblewrap (bwrap) is not installed (Debian: apt-get install bubblewrap)"
    walls = ["bwrap", "--unshare-all", "--ro-bind", "/", "/", "--", "true"]
    why = _probe(walls, "bubblewrap cannot make namespaces here")
    if why is None and _seccomp.supported():  # the watch too: a filter's listener handed over
        watch = [sys.executable, "-I", "-S", "-c", _PROBE, str(Path(__file__).parent)]
        why = _probe(watch, "the kernel does not let a sandbox be watched")
    return why


def _probe(argv: list[str], failed: str) -> str | None:
    """Run ``argv``: None when it succeeds, else ``failed`` with its last words."""
    try:
        done = subprocess.run(argv, capture_output=True, text=True, timeout=30, check=False)
    except (OSError, subprocess.TimeoutExpired) as exc:
        return f"{failed} ({exc})"
    if done.returncode == 0:
        return None
    said = done.stderr.strip().splitlines()
    return f"{failed} ({said[-1] if said else done.returncode})"


_PROBE = """
import os, socket, sys
sys.path.insert(0, sys.argv[1])
import _seccomp
said_r, said_w = os.pipe()
go_r, go_w = os.pipe()
child = os.fork()
if child == 0:
    os.close(said_r)
    os.close(go_w)
    _seccomp.filtered(said_w, go_r)
    os._exit(0)
os.close(said_w)
os.close(go_r)
ours, theirs = socket.socketpair()
_seccomp.handed(child, said_r, ours)
os.write(go_w, b"g")
said, fds, _, _ = socket.recv_fds(theirs, 512, 1)
os.waitpid(child, 0)
if not fds:
    sys.exit(said.decode().strip())
"""
"""Fork a child under the filter and take its listener, as the forwarder does."""


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
    ) -> None:
        # The endpoints' variables alone: a --set value naming a port is no endpoint.
        text = " ".join(v for k, v in variables.items() if k.startswith(ENDPOINTS))
        self._ports = sorted({int(p) for p in _PORTS.findall(text)})
        sockets = set(_SOCKETS.findall(text))
        self._binds = sorted({os.path.dirname(p) for p in sockets} | set(writable))
        self._sockets = frozenset(sockets) | frozenset(NSCD)
        self._sink = sink
        self._root = root
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
        if watched:
            write_names(self._names_dir, self._names)
        forwards = self.forwards()
        if watched:
            forwards[:0] = ["--control", self.control]
        names = self._names_dir if watched else None
        return [
            *sandbox_argv(program, [self._dir, *self._binds], names),
            sys.executable, "-I", "-S", FORWARD, *forwards, "--", *program,
        ]  # fmt: skip

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


def write_names(folder: str, names: Mapping[str, str]) -> None:
    """Write the ``resolv.conf`` and ``hosts`` a sandbox sees (``sandbox_argv``) in ``folder``.

    The resolver is the forwarder's (127.0.0.1:53); ``hosts`` has ``localhost``
    and the allowed names at their addresses inside: the host's own names would
    go around the resolver (every name is looked up there, and recorded).
    Rewritten in place, a running sandbox sees the new ones.
    """
    files = {
        "resolv.conf": "nameserver 127.0.0.1\noptions attempts:1 timeout:1\n",
        "hosts": "127.0.0.1 localhost\n::1 localhost ip6-localhost ip6-loopback\n"
        + "".join(f"{address} {name}\n" for name, address in names.items()),
    }
    for name, text in files.items():
        with open(
            os.path.join(folder, name),
            "r+" if os.path.exists(os.path.join(folder, name)) else "w",
            encoding="utf-8",
        ) as given:
            given.truncate(0)
            given.write(text)


def sandbox_argv(program: Sequence[str], writable: Sequence[str], names: str | None) -> list[str]:
    """Bubblewrap's command line up to the program, for a sandbox running ``program``.

    ``writable`` are bound read-write; with ``names`` (a folder ``write_names``
    wrote), its ``resolv.conf`` and ``hosts`` are the sandbox's and one capability
    is kept for the resolver's port (the forwarder's, dropped before the program).
    """
    binds = [arg for path in writable for arg in ("--bind", path, path)]
    hidden = [arg for path in _hidden() for arg in ("--tmpfs", path)]
    caps: list[str] = []
    resolver: list[str] = []
    if names is not None:
        caps = ["--cap-add", "CAP_NET_BIND_SERVICE"]
        for name in ("resolv.conf", "hosts"):
            if os.path.lexists(f"/etc/{name}"):  # (with none, resolvers ask 127.0.0.1)
                resolver += [
                    "--ro-bind",
                    os.path.join(names, name),
                    os.path.realpath(f"/etc/{name}"),
                ]
    shown = _shown(program)
    here = os.getcwd() if os.getcwd() in shown or not _under(os.getcwd(), _hidden()) else "/"
    return [
        "bwrap", "--die-with-parent", "--new-session", "--unshare-all", "--cap-drop", "ALL",
        *caps, "--ro-bind", "/", "/", "--dev", "/dev", "--proc", "/proc", *hidden,
        *(arg for path in shown for arg in ("--ro-bind", path, path)), *binds, *resolver,
        "--setenv", "TMPDIR", "/tmp", "--setenv", "PYTHONDONTWRITEBYTECODE", "1",
        "--chdir", here, "--",
    ]  # fmt: skip


def allowed_host(text: str) -> tuple[str, int]:
    """``--allow-host HOST[:PORT]`` as (host, port): port 443 when none is given.

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
            f"--allow-host {text!r}: inside the walls another machine is reached by its "
            "name, not its address (give the host name)"
        )
    if address is not None:
        host = "127.0.0.1"
    if not host or not 0 < port < 65536 or any(c in host for c in "/@ :"):
        raise ConfigError(f"--allow-host {text!r} is not HOST[:PORT] (e.g. api.internal:8443)")
    return host, port


def hidden_roots() -> list[str]:
    """The folders each sandbox has private and empty (``/tmp``, home...)."""
    return _hidden()


def _hidden() -> list[str]:
    """The hidden roots that exist here (real folders, not links to one another)."""
    real = {os.path.realpath(p) for p in HIDDEN if os.path.isdir(p)}
    return sorted(p for p in real if p != "/")


def _under(path: str, roots: Sequence[str]) -> bool:
    return any(Path(path).is_relative_to(root) for root in roots)


def _shown(program: Sequence[str]) -> list[str]:
    """What the program needs from the hidden roots, shown read-only.

    The working directory, the interpreters and the harness's code (the forwarder runs
    there), the program's folder and every path the command line names; never a hidden
    root itself or a folder holding one (``/tmp`` as the working directory would show
    every trial's files: the program then runs in ``/``). A program that needs more of
    the home folder (a version manager's shims) is named by its real path instead.
    """
    roots = _hidden()
    needed = {os.getcwd(), str(Path(__file__).parents[2])}
    needed |= {sys.prefix, sys.exec_prefix, sys.base_prefix, sys.base_exec_prefix}
    needed |= {arg for arg in program if os.path.exists(arg)}
    found = shutil.which(program[0]) if program else None
    if found:  # the program itself, wherever PATH found it (a link's target too)
        needed |= {os.path.dirname(found), os.path.dirname(os.path.realpath(found))}
    inside = {
        real
        for real in (os.path.realpath(p) for p in needed)
        if _under(real, roots) and not any(Path(root).is_relative_to(real) for root in roots)
    }
    # A path already shown with one of its parents needs no bind of its own.
    return sorted(
        p for p in inside if not any(p != q and Path(p).is_relative_to(q) for q in inside)
    )


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
