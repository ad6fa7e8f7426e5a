"""The rows an MCP server wrote to its SQLite world file, found after each call.

The server writes through its own connection, which no trigger of ours sees,
so after a call the file's tables are compared with their last reading, and
only when SQLite's ``data_version`` says another connection committed since
(a read costs one pragma; a write, one reading of the file's tables).
"""

from __future__ import annotations

import sqlite3
import threading
from typing import Any

from recorder import RowChange, WorldDelta, net_delta

from ..worlds import primary_keys


class FileChanges:
    """The rows a server changed in its SQLite world file since the last look."""

    def __init__(self, path: str) -> None:
        self._conn = sqlite3.connect(path, check_same_thread=False)
        self._lock = threading.Lock()
        self._version = self._data_version()
        self._tables = _tables(self._conn)

    def since(self) -> tuple[list[str], WorldDelta]:
        """The ``CREATE TABLE`` statements of new tables, and the rows changed, since last time."""
        with self._lock:
            version = self._data_version()
            if version == self._version:
                return [], {}
            after = _tables(self._conn)
            created = [
                row[0]
                for table in after.keys() - self._tables.keys()
                for row in self._conn.execute(
                    "SELECT sql FROM sqlite_master WHERE type = 'table' AND name = ?", (table,)
                )
            ]
            delta = _delta(self._tables, after)
            self._tables, self._version = after, version
            return created, delta

    def close(self) -> None:
        """Close the connection."""
        self._conn.close()

    def _data_version(self) -> int:
        return int(self._conn.execute("PRAGMA data_version").fetchone()[0])


_Tables = dict[str, dict[Any, dict[str, Any]]]


def _tables(conn: sqlite3.Connection) -> _Tables:
    """Every table of ``conn``: its rows by key (its primary key, else its rowid)."""
    out = {}
    for table, pk in primary_keys(conn).items():
        cols = [row[1] for row in conn.execute(f"PRAGMA table_info({_quote(table)})")]
        keys = ", ".join("rowid" if c == "rowid" else _quote(c) for c in pk)
        select = ", ".join(_quote(c) for c in cols)
        rows = {}
        for values in conn.execute(f"SELECT {keys}, {select} FROM {_quote(table)}"):
            rows[tuple(values[: len(pk)])] = dict(zip(cols, values[len(pk) :], strict=True))
        out[table] = rows
    return out


def _quote(name: str) -> str:
    return '"' + name.replace('"', '""') + '"'


def _delta(before: _Tables, after: _Tables) -> WorldDelta:
    """The rows that changed between two ``_tables`` readings, as a recorded delta.

    Whole rows in, and ``net_delta`` keeps of an update the fields that changed, as it
    does for every recorded delta (a dropped table's rows are deletes).
    """
    changed: WorldDelta = {}
    for table in [*after, *(t for t in before if t not in after)]:
        old, new = before.get(table, {}), after.get(table, {})
        rows = [
            RowChange(key=list(key), before=old.get(key), after=new.get(key))
            for key in [*new, *(k for k in old if k not in new)]
            if old.get(key) != new.get(key)
        ]
        if rows:
            changed[table] = rows
    return net_delta([changed])
