"""What a process tree holds: for ``--trial-memory`` and ``--trial-pids``.

A trial's memory is what its processes hold resident and what it stored in
its private tmpfs (``/tmp``, ``/dev/shm``...: memory too), counted together;
its processes are its tasks (threads included, as the kernel counts them).
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from dataclasses import dataclass


@dataclass(frozen=True)
class Usage:
    """What a trial holds at one look.

    Attributes:
        mb: Megabytes resident in its processes and stored in its private tmpfs.
        tasks: Its processes and threads.
        full: A private tmpfs it filled (its share of the memory cap), or None.
    """

    mb: int
    tasks: int
    full: str | None = None

    def over(self, memory_mb: int | None, tasks: int | None) -> str | None:
        """Why it is past ``memory_mb`` or ``tasks`` (the options named), or None."""
        if memory_mb and (self.mb > memory_mb or self.full):
            stored = f" (its {self.full} is full)" if self.full else ""
            return f"held {self.mb} MB{stored}, more than its {memory_mb} MB (--trial-memory)"
        if tasks and self.tasks >= tasks:
            return f"ran {self.tasks} processes and threads, its limit (--trial-pids)"
        return None


def resident_mb(root: int) -> int:
    """Megabytes resident in ``root`` and its descendants (walled ones too: their host ids)."""
    return usage(root).mb


def usage(
    root: int, private: Sequence[str] = (), cap_mb: int | None = None, *, here: bool = False
) -> Usage:
    """What ``root`` and its descendants hold, with what they stored in ``private`` folders.

    Resident memory is counted as pages resident (cheap, and counting a page each
    process shares once per process); past ``cap_mb`` so counted, again as each
    process's proportional share (``Pss``: a forked child's pages shared with its
    parent counted once in all), which is what decides. The folders are looked at as
    the tree's first process in a sandbox sees them (another mount namespace than
    this one's); with none there (a sandbox not yet made, or gone), nothing is stored,
    unless ``here``: this process is in the sandbox, its folders are the tree's.
    """
    parents: dict[int, int] = {}
    threads: dict[int, int] = {}
    for entry in os.scandir("/proc"):
        if entry.name.isdigit():
            try:
                with open(f"/proc/{entry.name}/stat", encoding="ascii", errors="replace") as stat:
                    fields = stat.read().rpartition(")")[2].split()
                parents[int(entry.name)] = int(fields[1])
                threads[int(entry.name)] = int(fields[17])
            except (OSError, ValueError, IndexError):
                continue  # gone in between
    tree, grown = {root}, True
    while grown:
        found = {pid for pid, parent in parents.items() if parent in tree} - tree
        tree |= found
        grown = bool(found)
    total = 0
    for pid in tree:
        try:
            with open(f"/proc/{pid}/statm", encoding="ascii") as statm:
                total += int(statm.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")
        except (OSError, ValueError, IndexError):
            continue
    inside = _inside(sorted(tree))
    if inside is not None:  # (its own folders only: a sandbox being made still sees ours)
        kept, full = stored(inside, private, mounted=True)
    else:
        kept, full = stored(root, private) if here else (0, None)
    if cap_mb is not None and (total + kept) // 2**20 > cap_mb:
        total = sum(_proportional(pid) for pid in tree)
    return Usage((total + kept) // 2**20, sum(threads.get(p, 0) for p in tree), full)


def _proportional(pid: int) -> int:
    """Bytes of its pages process ``pid`` holds, shared ones divided among their holders."""
    try:
        with open(f"/proc/{pid}/smaps_rollup", encoding="ascii", errors="replace") as rollup:
            for line in rollup:
                if line.startswith("Pss:"):
                    return int(line.split()[1]) * 1024
    except (OSError, ValueError, IndexError):
        pass
    return 0


def _inside(tree: list[int]) -> int | None:
    """The first process of ``tree`` in another mount namespace than this one."""
    try:
        own = os.readlink("/proc/self/ns/mnt")
    except OSError:
        return None
    for pid in tree:
        try:
            if os.readlink(f"/proc/{pid}/ns/mnt") != own:
                return pid
        except OSError:
            continue
    return None


def stored(pid: int, private: Sequence[str], mounted: bool = False) -> tuple[int, str | None]:
    """Bytes stored in the ``private`` tmpfs as ``pid`` sees them, and one that is full.

    ``mounted``: count only the folders mounted anew for ``pid`` (on another device than
    this process sees there), not the host's own that a sandbox being made still sees.
    """
    stored, full, seen = 0, None, set()
    for path in private:
        where = f"/proc/{pid}/root{path}"
        try:
            device = os.stat(where).st_dev
            if device in seen or (mounted and device == os.stat(path).st_dev):
                continue
            seen.add(device)
            fs = os.statvfs(where)
        except OSError:
            continue
        stored += (fs.f_blocks - fs.f_bfree) * fs.f_frsize
        if fs.f_blocks and fs.f_bavail == 0:
            full = path
    return stored, full
