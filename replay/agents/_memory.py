"""What a process tree holds: for ``--trial-memory`` (a program's, a zygote child's)."""

from __future__ import annotations

import os


def resident_mb(root: int) -> int:
    """Megabytes resident in ``root`` and its descendants (walled ones too: their host ids)."""
    parents: dict[int, int] = {}
    for entry in os.scandir("/proc"):
        if entry.name.isdigit():
            try:
                with open(f"/proc/{entry.name}/stat", encoding="ascii", errors="replace") as stat:
                    parents[int(entry.name)] = int(stat.read().rpartition(")")[2].split()[1])
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
    return total // (1024 * 1024)
