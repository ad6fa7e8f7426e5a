"""What an in-process agent leaves running: its processes, stopped when its trial ends.

An agent in the harness's process (``--isolation none``) starts its programs
as the harness's children, in the harness's session. When a trial ends, the
children of this process in its session that were not there when the trial
began are the trial's: they and their descendants are stopped, and the trial
says so. The harness's own processes (MCP servers, zygotes, agent programs)
run in sessions of their own and are never among them; nor is a program the
agent started in a new session (``start_new_session=True``: only walls hold
such a one).

Trials that run at once in one process cannot tell whose child is whose: the
processes are stopped when the last of them ends (``Tracker.end``).
"""

from __future__ import annotations

import contextlib
import os
import signal
import threading


class Tracker:
    """Counts the in-process trials under way; stops their leftovers when none is."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._running = 0
        self._before: set[int] = set()

    def begin(self) -> None:
        """A trial starts: what runs now is not its."""
        with self._lock:
            if self._running == 0:
                self._before = set(_children())
            self._running += 1

    def end(self) -> int:
        """A trial ended: the processes stopped (when it was the last under way), or 0."""
        with self._lock:
            self._running -= 1
            if self._running:
                return 0
            left = [pid for pid in _children() if pid not in self._before]
        return _stop(left)


TRACKER = Tracker()
"""This process's in-process trials."""


def _children() -> list[int]:
    """This process's children in its own session (its threads' ``children`` lists: cheap).

    A thread that exits meanwhile hands its children to another thread, perhaps one
    already read: the lists are read again while the threads change, and after a few
    tries every process's parent is read instead.
    """
    session = os.getsid(0)
    for _ in range(5):
        try:
            threads = os.listdir("/proc/self/task")
        except OSError:
            return []
        pids: list[int] = []
        for thread in threads:
            try:
                with open(f"/proc/self/task/{thread}/children", encoding="ascii") as children:
                    pids += [int(pid) for pid in children.read().split()]
            except (OSError, ValueError):
                continue  # (a thread gone in between: the list is read again)
        if os.listdir("/proc/self/task") == threads:
            break
    else:
        me = os.getpid()
        pids = [pid for pid, parent in _parents().items() if parent == me]
    found = []
    for pid in pids:
        with contextlib.suppress(OSError):
            if os.getsid(pid) == session:
                found.append(pid)
    return found


def _parents() -> dict[int, int]:
    parents: dict[int, int] = {}
    for name in os.listdir("/proc"):
        if name.isdigit():
            try:
                with open(f"/proc/{name}/stat", encoding="ascii", errors="replace") as stat:
                    fields = stat.read().rpartition(")")[2].split()
                if fields[0] != "Z":  # (a zombie is over: only reaped)
                    parents[int(name)] = int(fields[1])
            except (OSError, ValueError, IndexError):
                continue
    return parents


def _stop(roots: list[int]) -> int:
    """Kill ``roots`` and their descendants; reap the roots (this process's children).

    Each is stopped (``SIGSTOP``) as it is found, and the tree looked at again until
    no new one is: a process that forked meanwhile is stopped with its child found,
    none is orphaned on the way. Then every one is killed.
    """
    if not roots:
        return 0
    tree: set[int] = set()
    found = set(roots)
    while found:
        for pid in found:
            with contextlib.suppress(OSError):
                os.kill(pid, signal.SIGSTOP)
        tree |= found
        parents = _parents()
        found = {pid for pid, parent in parents.items() if parent in tree} - tree
    for pid in tree:
        with contextlib.suppress(OSError):
            os.kill(pid, signal.SIGKILL)
    for pid in roots:
        with contextlib.suppress(ChildProcessError, OSError):
            os.waitpid(pid, 0)
    return len(tree)
