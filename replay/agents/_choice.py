"""Where a run's agent runs: whether walls can be built here, and ``auto`` chosen for the mode."""

from __future__ import annotations

import functools
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Literal

from recorder import ConfigError

from ..modes import Mode
from . import _seccomp


@functools.cache
def unavailable() -> str | None:
    """Why isolation cannot run here, or None when it can (asked once a process)."""
    if shutil.which("bwrap") is None:
        return "bubblewrap (bwrap) is not installed (Debian: apt-get install bubblewrap)"
    # The walls' own options: a sized, private /tmp needs bubblewrap 0.7 (--size), unprivileged.
    sized = ["--perms", "1777", "--size", str(2**20), "--tmpfs", "/tmp"]
    walls = ["bwrap", "--unshare-all", "--ro-bind", "/", "/", *sized, "--", "true"]
    why = _probe(walls, "bubblewrap cannot make namespaces here")
    if why is not None and _probe([*walls[:5], "--", "true"], "") is None:
        said = why.partition(" (")[2].removesuffix(")")
        if "Unknown option" in said:
            why = (
                "bubblewrap is too old here: the walls size each private folder, which needs "
                f"bubblewrap 0.7 or later (--size) ({said})"
            )
        elif "setuid" in said:
            why = (
                "this bubblewrap is setuid, which may not size a private folder (--size): "
                f"the walls need one that runs in user namespaces ({said})"
            )
        else:
            why = f"bubblewrap cannot make a sized private folder here ({said})"
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


Isolation = Literal["none", "process"]


def choose_isolation(asked: str, mode: Mode) -> tuple[Isolation, str | None]:
    """The isolation of a run's agents in ``mode``, and a warning when ``auto`` found no walls.

    ``auto`` is ``process`` for a mode that asks for walls (``Mode.walled``) where
    this machine can build them (``unavailable``), else ``none``; ``none`` and
    ``process`` are as asked.

    Raises:
        ConfigError: ``process`` for a mode that runs the agent, where walls are
            unavailable; or no isolation of that name.
    """
    if asked == "auto":
        why = unavailable() if mode.walled else None
        if why is None:
            return ("process" if mode.walled else "none"), None
        return "none", (
            f"{mode.name}: no walls on this machine ({why}): each agent runs in this process "
            "(`agent.isolation=none`; see the docs' known limits, docs/pages/limits.md)"
        )
    if asked == "process":
        why = unavailable() if mode.runs_agent else None
        if why is not None:
            raise ConfigError(
                f"`agent.isolation=process` is unavailable: {why}; use `agent.isolation=none`"
            )
        return "process", None
    if asked == "none":
        return "none", None
    raise ConfigError(f"`agent.isolation` is {asked!r}: use auto, none or process")
