"""SQLite change capture: what each tool call did to the world, row by row.

TEMP triggers on every table append each inserted, deleted or updated row
(as JSON) to a TEMP change log. They live only in the capturing connection,
so the world file gains no schema, and reading the changes of one call costs
the rows it changed, not the size of its tables.

Limits, each reported or documented rather than guessed around:
- changes made through another connection are not seen (``PRAGMA
  data_version`` tells us they happened; the recording warns);
- ``ALTER TABLE ... DROP COLUMN`` on a captured table fails while capturing
  (SQLite refuses to drop a column a trigger reads); a renamed table reads as
  a dropped one plus a new one; a column added by ``ALTER TABLE`` is captured
  from the next tool call on (triggers are re-armed between calls);
- ``recursive_triggers`` is switched on while capturing so that rows removed
  by ``REPLACE`` fire the delete trigger; it is restored on close.
"""

from __future__ import annotations

import itertools
import json
import sqlite3
import threading
import weakref
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from ._delta import DeltaBuilder
from ._schema import Scalar, WorldDelta
from ._world_hash import world_hash as world_hash  # (imported from here by the package)

_instances = itertools.count(1)
_CHUNK = 100  # json_array arguments per call; SQLite allows at most 127 by default
_REAL_TAG = "$real"


def _q(name: str) -> str:
    return '"' + name.replace('"', '""') + '"'


def _lit(text: str) -> str:
    return "'" + text.replace("'", "''") + "'"


def _value_sql(ref: str) -> str:
    # Reals go out as 17 significant digits (json_array keeps 15, and cannot write Inf),
    # tagged so they are not mistaken for text; blobs as hex.
    return (
        f"CASE typeof({ref}) WHEN 'real' THEN json_object('{_REAL_TAG}', printf('%!.17g', {ref})) "
        f"WHEN 'blob' THEN hex({ref}) ELSE {ref} END"
    )


def _text(data: bytes) -> str:
    return data.decode("utf-8", "replace")


def _untag(obj: dict[str, Any]) -> Any:
    return float(obj[_REAL_TAG]) if len(obj) == 1 and _REAL_TAG in obj else obj


_DECODER = json.JSONDecoder(object_hook=_untag)


def _decode(text: str) -> list[Any]:
    values: list[Any] = _DECODER.decode(text)
    return values


@dataclass(frozen=True, slots=True)
class _Table:
    name: str
    columns: tuple[str, ...]
    key_positions: tuple[int, ...]
    """Positions of the primary key in the logged value array."""
    has_rowid: bool
    """Logged arrays start with the rowid (tables without an explicit primary key)."""

    def values_sql(self, ref: str) -> str:
        cols = [f"{ref}.{_q(c)}" for c in self.columns]
        if self.has_rowid:
            cols.insert(0, f"{ref}._rowid_")
        parts = [_value_sql(c) for c in cols]
        if len(parts) <= _CHUNK:
            return f"json_array({', '.join(parts)})"
        chunks = [
            f"json_array({', '.join(parts[i : i + _CHUNK])})" for i in range(0, len(parts), _CHUNK)
        ]
        return f"json_array({', '.join(chunks)})"

    def row(self, text: str) -> tuple[tuple[Scalar, ...], dict[str, Any]]:
        values = _decode(text)
        if len(self.columns) + self.has_rowid > _CHUNK:
            values = [v for chunk in values for v in chunk]
        key = tuple(values[i] for i in self.key_positions)
        data = values[1:] if self.has_rowid else values
        return key, dict(zip(self.columns, data, strict=True))


class ChangeCapture:
    """Captures row changes made through one ``sqlite3.Connection``.

    Args:
        conn: The connection tools use to read and write the world.
    """

    def __init__(self, conn: sqlite3.Connection) -> None:
        self.conn = conn
        self._id = next(_instances)
        self._log = f"_replay_changes_{self._id}"
        self._seq_fn = f"_replay_seq_{self._id}"
        # Log ids come from Python, not the table: a rolled-back transaction must not
        # hand out again ids the capture has already read past.
        self._ids = _Ids()
        conn.create_function(self._seq_fn, 0, self._ids)
        self._tables: dict[str, _Table] = {}
        self._slots: dict[str, int] = {}
        self._mark = 0
        self._changes = -1
        """The connection's ``total_changes`` when the log was last read: no row it changed
        since (no trigger fired, nothing logged) while it stays the same."""
        self._recursive = bool(self._one("PRAGMA recursive_triggers"))
        self._run("PRAGMA recursive_triggers = ON")
        self._run(
            f"CREATE TEMP TABLE {self._log}"
            "(id INTEGER PRIMARY KEY, tbl TEXT NOT NULL, old TEXT, new TEXT)"
        )
        self._schema_version = -1
        self._sync_schema(initial=True)
        self._data_version = self._one("PRAGMA main.data_version")
        self._keep()
        self._kept: tuple[int, dict[str, _Table], dict[str, int]] | None = None
        self._busy = threading.Lock()

    @classmethod
    def begin(cls, conn: sqlite3.Connection) -> ChangeCapture:
        """A capture for one recording: the one kept on ``conn`` if it is free, else a new one."""
        kept = _kept.get(id(conn))
        if kept is not None and kept._busy.acquire(blocking=False):
            rewound = False
            try:
                rewound = kept._rewind()
            finally:
                if not rewound:
                    kept._busy.release()
            if rewound:
                return kept
        return cls(conn)

    def _rewind(self) -> bool:
        """Start a recording on a kept capture; False if the world is not where it was kept."""
        assert self._kept is not None
        version, tables, slots = self._kept
        if self._one("PRAGMA main.schema_version") != version:
            return False
        # The connection went back to its kept state (a rollback): so did its schema, and
        # the triggers armed since for new tables went with it.
        self._schema_version, self._tables, self._slots = version, dict(tables), dict(slots)
        self._mark = self._ids.last
        self._changes = self.conn.total_changes  # (what was logged before is behind the mark)
        self._data_version = self._one("PRAGMA main.data_version")
        return True

    def _keep(self) -> None:
        # A connection whose whole session is one transaction (a replay World) offers
        # keep(): move its savepoint past our TEMP table and triggers, so that a tool's
        # rollback() to that savepoint does not drop them.
        keep = getattr(self.conn, "keep", None)
        if callable(keep):
            keep()

    # -- statements of our own, immune to the user's connection settings -----

    def _rows(self, sql: str, params: tuple[Any, ...] = ()) -> list[tuple[Any, ...]]:
        text_factory = self.conn.text_factory
        self.conn.text_factory = _text
        try:
            cursor = self.conn.cursor()
            cursor.row_factory = None
            return cursor.execute(sql, params).fetchall()
        finally:
            self.conn.text_factory = text_factory

    def _one(self, sql: str) -> int:
        return int(self._rows(sql)[0][0])

    def _run(self, sql: str) -> None:
        # Inside the user's transaction (or in autocommit mode), just join it. Outside one,
        # legacy isolation would open an implicit BEGIN before an INSERT and leave the
        # connection inside a transaction, so switch it off around the statement. Only
        # then: assigning isolation_level COMMITs whatever is open.
        if self.conn.isolation_level is None or self.conn.in_transaction:
            self.conn.execute(sql)
            return
        level = self.conn.isolation_level
        self.conn.isolation_level = None
        try:
            self.conn.execute(sql)
        finally:
            self.conn.isolation_level = level

    # -- schema ---------------------------------------------------------------

    def _user_tables(self) -> list[str]:
        rows = self._rows(
            "SELECT name, sql FROM main.sqlite_master WHERE type = 'table' "
            "AND name NOT LIKE 'sqlite\\_%' ESCAPE '\\'"
        )
        virtual = [n for n, sql in rows if (sql or "").upper().startswith("CREATE VIRTUAL")]
        shadow = tuple(v + "_" for v in virtual)
        return [n for n, _ in rows if n not in virtual and not n.startswith(shadow)]

    def _describe(self, name: str) -> _Table:
        info = self._rows(f"PRAGMA main.table_info({_q(name)})")
        columns = tuple(r[1] for r in info)
        pk = sorted((r[5], r[1]) for r in info if r[5])
        if not pk:  # keyed by rowid, logged as the first value
            return _Table(name, columns, (0,), True)
        return _Table(name, columns, tuple(columns.index(c) for _, c in pk), False)

    def _install(self, table: _Table, slot: int) -> None:
        target = f"main.{_q(table.name)}"
        log = (
            f"INSERT INTO {self._log}(id, tbl, old, new) "
            f"VALUES ({self._seq_fn}(), {_lit(table.name)}"
        )
        for op, when, old, new in (
            ("i", "INSERT", "NULL", table.values_sql("NEW")),
            ("d", "DELETE", table.values_sql("OLD"), "NULL"),
            ("u", "UPDATE", table.values_sql("OLD"), table.values_sql("NEW")),
        ):
            trigger = f"_replay_{self._id}_{op}{slot}"
            self._run(f"DROP TRIGGER IF EXISTS temp.{trigger}")
            self._run(
                f"CREATE TEMP TRIGGER {trigger} AFTER {when} ON {target} "
                f"BEGIN {log}, {old}, {new}); END"
            )

    def _armed(self) -> set[str]:
        rows = self._rows(
            "SELECT tbl_name FROM temp.sqlite_master WHERE type = 'trigger' AND name LIKE ? "
            "ESCAPE '\\'",
            (f"\\_replay\\_{self._id}\\_%",),
        )
        return {r[0] for r in rows}

    def _sync_schema(self, *, initial: bool = False) -> list[str]:
        """Re-arm triggers after any schema change; return warnings."""
        version = self._one("PRAGMA main.schema_version")
        if version == self._schema_version:
            return []
        self._schema_version = version
        notes = []
        current = self._user_tables()
        for name in [n for n in self._tables if n not in current]:
            notes.append(f"table {name!r} was dropped or renamed; its rows are not in the delta")
            del self._tables[name]
            for op in "idu":  # a renamed table keeps its triggers, now logging the old name
                self._run(f"DROP TRIGGER IF EXISTS temp._replay_{self._id}_{op}{self._slots[name]}")
        armed = self._armed()
        for name in current:
            table = self._describe(name)
            known = self._tables.get(name)
            if known == table and name in armed:
                continue
            if known is not None and name not in armed:
                notes.append(
                    f"table {name!r} was dropped and created again; "
                    "only its changes since then are in the delta"
                )
            self._tables[name] = table
            self._install(table, self._slots.setdefault(name, len(self._slots)))
            if known is None and not initial:
                self._log_existing_rows(table)
        if not initial:
            self._keep()
        return notes

    def _log_existing_rows(self, table: _Table) -> None:
        # A table created during the trial: every row it holds is an insert.
        self._run(
            f"INSERT INTO {self._log}(id, tbl, old, new) SELECT {self._seq_fn}(), "
            f"{_lit(table.name)}, NULL, {table.values_sql('t')} FROM main.{_q(table.name)} AS t"
        )

    # -- reading changes --------------------------------------------------------

    def take(self) -> tuple[WorldDelta, list[str]]:
        """Return the changes since the last call, and warnings about what was missed."""
        builder = DeltaBuilder()
        # Read what the current triggers logged before re-arming them for a new schema.
        changes = self.conn.total_changes  # (read first: a change after it is read next time)
        if changes != self._changes:
            self._drain(builder)
        schema = self._one("PRAGMA main.schema_version")
        data = self._one("PRAGMA main.data_version")
        notes: list[str] = []
        if schema != self._schema_version:
            notes = self._sync_schema()
            changes = self.conn.total_changes
            self._drain(builder)  # re-armed: a new table's rows may be logged
        self._changes = changes
        if data != self._data_version:
            self._data_version = data
            notes.append(
                "another connection wrote to the world; those changes are not captured "
                "(give tools the recorded connection)"
            )
        return builder.build(), notes

    def _drain(self, builder: DeltaBuilder) -> None:
        """Add what the triggers logged since the last drain.

        Read only when the connection changed rows since (``_changes``): a tool call that
        only read costs two statements (the versions), not three.
        """
        rows = self._rows(
            f"SELECT id, tbl, old, new FROM temp.{self._log} WHERE id > ? ORDER BY id",
            (self._mark,),
        )
        for _, tbl, old, new in rows:
            table = self._tables[tbl]
            before = table.row(old) if old is not None else None
            after = table.row(new) if new is not None else None
            if before and after and before[0] != after[0]:
                # The primary key itself changed: a delete of the old key, an insert of the new.
                builder.add(tbl, before[0], before[1], None)
                builder.add(tbl, after[0], None, after[1])
            elif before:
                builder.add(tbl, before[0], before[1], after[1] if after else None)
            elif after:
                builder.add(tbl, after[0], None, after[1])
        if rows:
            self._mark = rows[-1][0]

    def close(self) -> None:
        """Remove this capture's triggers and change log (a kept one stays, for the next)."""
        if self._kept is not None:
            if self._busy.locked():
                self._busy.release()
            return
        self._drop()

    def _release(self) -> None:
        if _kept.get(id(self.conn)) is self:
            del _kept[id(self.conn)]
        self._drop()

    def _drop(self) -> None:
        for name in self._rows(
            "SELECT name FROM temp.sqlite_master "
            "WHERE type = 'trigger' AND name LIKE ? ESCAPE '\\'",
            (f"\\_replay\\_{self._id}\\_%",),
        ):
            self._run(f"DROP TRIGGER IF EXISTS temp.{_q(name[0])}")
        self._run(f"DROP TABLE IF EXISTS temp.{self._log}")
        self._run(f"PRAGMA recursive_triggers = {'ON' if self._recursive else 'OFF'}")


class _Ids:
    """The change log's ids (the triggers call it: it must not hold the capture)."""

    def __init__(self) -> None:
        self.last = 0

    def __call__(self) -> int:
        self.last += 1
        return self.last


_kept: weakref.WeakValueDictionary[int, ChangeCapture] = weakref.WeakValueDictionary()
"""Captures kept on their connections, by ``id(connection)`` (a kept capture holds its
connection, so the id is not reused while the entry lives)."""


def keep_capture(conn: sqlite3.Connection) -> Callable[[], None]:
    """Arm change capture on ``conn`` once, for every recording made on it from now on.

    A recording arms its TEMP triggers when it starts and drops them when it
    closes: two TEMP schema changes per recording, and every schema change
    makes SQLite prepare the connection's statements again. A connection that
    records many trials, each rolled back to where it was here (a replay
    ``World``), can keep them armed instead. Call this outside any
    transaction (the triggers must outlive the trials' rollbacks). It returns
    the function that drops them (the same one if ``conn`` has a kept capture
    already): call it before closing ``conn`` or replacing its database; the
    capture lasts as long as that function is referenced. A recording that
    finds the schema changed since, or the kept capture in use, arms its own.

    Raises:
        ValueError: ``conn`` is inside a transaction.
    """
    if conn.in_transaction:
        raise ValueError(
            "keep_capture() arms triggers that must outlive the trials' rollbacks: "
            "call it outside any transaction (before BEGIN)"
        )
    kept = _kept.get(id(conn))
    if kept is not None:
        return kept._release
    capture = ChangeCapture(conn)
    capture._kept = (capture._schema_version, dict(capture._tables), dict(capture._slots))
    _kept[id(conn)] = capture
    return capture._release
