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

Where bubblewrap or user namespaces are missing, asking for it is a
one-line ``ConfigError`` saying why.
"""

from __future__ import annotations

import contextlib
import functools
import os
import re
import shutil
import socket
import subprocess
import sys
import tempfile
import threading
from collections.abc import Mapping, Sequence
from pathlib import Path
from types import TracebackType

from recorder import ConfigError

from ._forward import splice

FORWARD = str(Path(__file__).with_name("_forward.py"))
ENDPOINTS = ("OPENAI_BASE_URL", "ANTHROPIC_BASE_URL", "REPLAY_MCP_")
"""The variables that hold the trial's endpoints (the ports bridged, the sockets bound)."""
HIDDEN = ("/tmp", "/var/tmp", "/run", "/var/run", "/dev/shm", os.path.expanduser("~"))
"""Where other trials, services and the user keep their files and sockets: empty inside
(a private tmpfs each), but for what the program needs (``_shown``)."""
_PORTS = re.compile(r"https?://127\.0\.0\.1:(\d+)")
_SOCKETS = re.compile(r"unix:([^\"\s,\]]+)")


@functools.cache
def unavailable() -> str | None:
    """Why isolation cannot run here, or None when it can (asked once a process)."""
    if shutil.which("bwrap") is None:
        return "bubblewrap (bwrap) is not installed (Debian: apt-get install bubblewrap)"
    try:
        probe = subprocess.run(
            ["bwrap", "--unshare-all", "--ro-bind", "/", "/", "--", "true"],
            capture_output=True,
            text=True,
            timeout=30,
            check=False,
        )
    except (OSError, subprocess.TimeoutExpired) as exc:
        return f"bubblewrap does not run here ({exc})"
    if probe.returncode != 0:
        said = probe.stderr.strip().splitlines()
        return f"bubblewrap cannot make namespaces here ({said[-1] if said else probe.returncode})"
    return None


def require() -> None:
    """Raise ``ConfigError`` unless isolation can run here."""
    why = unavailable()
    if why is not None:
        raise ConfigError(f"--isolation process is unavailable: {why}; use --isolation none")


class Walls:
    """The walls around one run of an agent program, given its environment.

    Use as a context manager: ``argv(program)`` is the command to run inside.
    """

    def __init__(self, variables: Mapping[str, str], writable: Sequence[str] = ()) -> None:
        # The endpoints' variables alone: a --set value naming a port is no endpoint.
        text = " ".join(v for k, v in variables.items() if k.startswith(ENDPOINTS))
        self._ports = sorted({int(p) for p in _PORTS.findall(text)})
        self._binds = sorted({os.path.dirname(p) for p in _SOCKETS.findall(text)} | set(writable))
        self._dir = ""
        self._bridges: list[_Bridge] = []

    def __enter__(self) -> Walls:
        self._dir = tempfile.mkdtemp(prefix="replay-walls-")
        self._bridges = [_Bridge(port, os.path.join(self._dir, f"{port}")) for port in self._ports]
        return self

    def __exit__(
        self,
        kind: type[BaseException] | None,
        exc: BaseException | None,
        trace: TracebackType | None,
    ) -> None:
        for bridge in self._bridges:
            bridge.close()
        shutil.rmtree(self._dir, ignore_errors=True)

    def argv(self, program: Sequence[str]) -> list[str]:
        """``program`` inside the walls (its working directory: this one, read-only)."""
        binds = [arg for path in (self._dir, *self._binds) for arg in ("--bind", path, path)]
        hidden = [arg for path in _hidden() for arg in ("--tmpfs", path)]
        shown = _shown(program)
        here = os.getcwd() if os.getcwd() in shown or not _under(os.getcwd(), _hidden()) else "/"
        forwards = [f"{b.port}={b.path}" for b in self._bridges]
        return [
            "bwrap", "--die-with-parent", "--new-session", "--unshare-all", "--cap-drop", "ALL",
            "--ro-bind", "/", "/", "--dev", "/dev", "--proc", "/proc", *hidden,
            *(arg for path in shown for arg in ("--ro-bind", path, path)), *binds,
            "--setenv", "TMPDIR", "/tmp", "--chdir", here,
            "--", sys.executable, "-I", "-S", FORWARD, *forwards, "--", *program,
        ]  # fmt: skip


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
    """A Unix socket here whose every connection is piped to ``127.0.0.1:port``."""

    def __init__(self, port: int, path: str) -> None:
        self.port, self.path = port, path
        self._listener = socket.socket(socket.AF_UNIX)
        self._listener.bind(path)
        self._listener.listen(64)
        threading.Thread(target=self._serve, name="replay-walls", daemon=True).start()

    def _serve(self) -> None:
        while True:
            try:
                conn, _ = self._listener.accept()
            except OSError:
                return  # closed
            try:
                there = socket.create_connection(("127.0.0.1", self.port))
            except OSError:
                conn.close()
                continue
            there.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
            splice(conn, there)

    def close(self) -> None:
        """Stop listening."""
        with contextlib.suppress(OSError):
            self._listener.shutdown(socket.SHUT_RDWR)
        self._listener.close()
