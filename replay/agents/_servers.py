"""Third-party MCP servers walled in as agents are: ``replay.mcp.ServerWall`` made real.

A server started by command (``--mcp-server NAME=COMMAND``) for a walled trial
runs inside walls of its own (``Walls``): its own namespaces and root
filesystem (its program and its code, the world's file where ``{world}`` names
it, nothing else of the host), the agent's uid with no capability, no network
(its stdio is its one channel), and the trial's caps: its tmpfs sized, at
most ``--trial-pids`` processes, and its memory (resident and stored in its
tmpfs) watched, a server past ``--trial-memory`` stopped as failed (``over``).
What it reaches for is refused; no record of it is kept (the agent under test
did not reach).
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field

from ._bwrap import hidden_roots
from ._isolation import Caps, Walls
from ._memory import usage


class _Unrecorded:
    """A server's refused reaches: refused, not the trial's violations."""

    def violation(self, action: str, target: str, via: str) -> None:
        """Dropped."""

    def warn(self, message: str) -> None:
        """Dropped."""


@dataclass(frozen=True)
class ServerWalls:
    """Walls for a run's started MCP servers, with the caps its agents have."""

    caps: Caps = field(default_factory=Caps)

    @contextlib.contextmanager
    def __call__(self, command: Sequence[str], writable: Sequence[str]) -> Iterator[list[str]]:
        """``command`` inside walls that let it write in ``writable`` alone."""
        with Walls({}, writable, _Unrecorded(), caps=self.caps) as walls:
            yield walls.argv(command)

    def over(self, pid: int) -> str | None:
        """Why the server started as ``pid`` holds more than the caps (``Usage.over``)."""
        memory, tasks = self.caps.memory_mb, self.caps.tasks
        if not memory and not tasks:
            return None
        return usage(pid, hidden_roots(), memory).over(memory, tasks)
