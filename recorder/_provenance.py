"""Where a recording comes from: its pins (the agent's git version, the fixture's hash)."""

from __future__ import annotations

import functools
import os
import sqlite3
import subprocess
from collections.abc import Mapping
from pathlib import Path

from ._capture import world_hash
from ._redact import Secrets
from ._schema import Pins


def pins_for(
    pins: Pins | Mapping[str, str] | None,
    world: sqlite3.Connection | None,
    agent_version: str | None,
    secrets: Secrets,
) -> Pins:
    """The pins a recording writes: the given ones, scrubbed, with what it can find out.

    The fixture's hash is the world's when not given; the agent's version is
    ``agent_version``, else the pinned one, else the git commit of the
    current directory.
    """
    base = pins if isinstance(pins, Pins) else Pins(user=dict(pins or {}))
    if secrets:
        base = base.model_copy(update={"user": secrets.scrub_value(base.user)})
    fixture_hash = base.fixture_hash or (world_hash(world) if world is not None else None)
    return base.model_copy(
        update={
            "fixture_hash": fixture_hash,
            "agent_version": agent_version or base.agent_version or git_version(),
        }
    )


def database_file(conn: sqlite3.Connection) -> str | None:
    """The file of a connection's main database (None in memory, or when it cannot say)."""
    try:
        for _, name, file in conn.execute("PRAGMA database_list").fetchall():
            if name == "main":
                return str(file) or None
    except sqlite3.Error:
        return None
    return None


def git_version(cwd: Path | None = None) -> str | None:
    """Return the git commit of ``cwd`` (with ``-dirty`` if modified), or None.

    Asked once per directory and process: the code a process runs is what it
    imported, whatever changes on disk later (and it saves two ``git`` runs
    per trial).
    """
    return _git_version(str(Path(cwd).resolve()) if cwd is not None else os.getcwd())


@functools.lru_cache(maxsize=16)
def _git_version(cwd: str) -> str | None:
    try:
        commit = _git(cwd, "rev-parse", "--short=12", "HEAD")
        dirty = _git(cwd, "status", "--porcelain", "--untracked-files=no")
    except (OSError, subprocess.SubprocessError):
        return None
    return f"{commit}-dirty" if dirty else commit or None


def _git(cwd: str, *args: str) -> str:
    run = subprocess.run(
        ["git", *args], cwd=cwd, capture_output=True, text=True, timeout=5, check=True
    )
    return run.stdout.strip()
