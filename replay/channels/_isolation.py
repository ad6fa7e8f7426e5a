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
  harness's code), a private ``/tmp``, a fresh ``/proc`` that shows its own
  processes only (none of the harness's memory or environment).
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
        text = " ".join(variables.values())
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
        shown = [arg for path in _under_tmp(program) for arg in ("--ro-bind", path, path)]
        forwards = [f"{b.port}={b.path}" for b in self._bridges]
        return [
            "bwrap", "--die-with-parent", "--new-session", "--unshare-all",
            "--ro-bind", "/", "/", "--dev", "/dev", "--proc", "/proc", "--tmpfs", "/tmp",
            *shown, *binds, "--chdir", os.getcwd(),
            "--", sys.executable, "-I", "-S", FORWARD, *forwards, "--", *program,
        ]  # fmt: skip


def _under_tmp(program: Sequence[str]) -> list[str]:
    """What the program needs from under ``/tmp``, which the walls hide, shown read-only.

    The working directory, the interpreter and the harness's code (the forwarder runs
    there), and every path the command line names; nothing else of ``/tmp``.
    """
    needed = {os.getcwd(), sys.prefix, sys.exec_prefix, str(Path(__file__).parents[2])}
    needed |= {arg for arg in program if os.path.exists(arg)}
    tmp = Path("/tmp").resolve()
    inside = {str(Path(p).resolve()) for p in needed if Path(p).resolve().is_relative_to(tmp)}
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
