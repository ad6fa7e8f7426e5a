"""SQLite change capture: what each tool call did to the world, row by row.

TEMP triggers on every table append each inserted, deleted or updated row
(as JSON) to a TEMP change log. They live only in the capturing connection,
so the world file gains no schema, and reading the changes of one call costs
the rows it changed, not the size of its tables. Changes made through
another connection are not seen; ``PRAGMA data_version`` tells us they
happened, and the recording says so.
"""

from __future__ import annotations

import hashlib
import json
import sqlite3
from dataclasses import dataclass
from typing import Any

from ._delta import DeltaBuilder
from ._schema import Scalar, WorldDelta

_LOG = "_replay_changes"


def _q(name: str) -> str:
    return '"' + name.replace('"', '""') + '"'


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
            cols.insert(0, f"{ref}.rowid")
        parts = [f"CASE typeof({c}) WHEN 'blob' THEN hex({c}) ELSE {c} END" for c in cols]
        return f"json_array({', '.join(parts)})"

    def row(self, values: list[Any]) -> tuple[tuple[Scalar, ...], dict[str, Any]]:
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
        self._tables: dict[str, _Table] = {}
        self._triggers = 0
        conn.execute(
            f"CREATE TEMP TABLE IF NOT EXISTS {_LOG}"
            "(id INTEGER PRIMARY KEY, tbl TEXT NOT NULL, old TEXT, new TEXT)"
        )
        self._mark = conn.execute(f"SELECT coalesce(max(id), 0) FROM temp.{_LOG}").fetchone()[0]
        self._schema_version = -1
        self._sync_schema(initial=True)
        self._data_version = self._pragma("data_version")

    def _pragma(self, name: str) -> int:
        return int(self.conn.execute(f"PRAGMA main.{name}").fetchone()[0])

    def _user_tables(self) -> list[str]:
        rows = self.conn.execute(
            "SELECT name, sql FROM main.sqlite_master WHERE type = 'table' "
            "AND name NOT LIKE 'sqlite_%'"
        ).fetchall()
        virtual = [n for n, sql in rows if (sql or "").upper().startswith("CREATE VIRTUAL")]
        return [
            n
            for n, _ in rows
            if n not in virtual and not any(n.startswith(v + "_") for v in virtual)
        ]

    def _describe(self, name: str) -> _Table:
        info = self.conn.execute(f"PRAGMA main.table_info({_q(name)})").fetchall()
        columns = tuple(r[1] for r in info)
        pk = sorted((r[5], r[1]) for r in info if r[5])
        if not pk:  # keyed by rowid, logged as the first value
            return _Table(name, columns, (0,), True)
        return _Table(name, columns, tuple(columns.index(c) for _, c in pk), False)

    def _install(self, table: _Table, n: int) -> None:
        name = table.name.replace("'", "''")
        target = f"main.{_q(table.name)}"
        for op, when, old, new in (
            ("i", "INSERT", "NULL", table.values_sql("NEW")),
            ("d", "DELETE", table.values_sql("OLD"), "NULL"),
            ("u", "UPDATE", table.values_sql("OLD"), table.values_sql("NEW")),
        ):
            self.conn.execute(
                f"CREATE TEMP TRIGGER IF NOT EXISTS _replay_{op}{n} AFTER {when} ON {target} "
                f"BEGIN INSERT INTO {_LOG}(tbl, old, new) VALUES ('{name}', {old}, {new}); END"
            )

    def _sync_schema(self, *, initial: bool = False) -> list[str]:
        """Install triggers on tables created since the last call; return warnings."""
        version = self._pragma("schema_version")
        if version == self._schema_version:
            return []
        self._schema_version = version
        current = self._user_tables()
        notes = [
            f"table {name!r} was dropped; its rows are not in the delta"
            for name in self._tables
            if name not in current
        ]
        for name in [n for n in self._tables if n not in current]:
            del self._tables[name]
        for name in current:
            if name in self._tables:
                continue
            table = self._describe(name)
            self._tables[name] = table
            self._triggers += 1
            self._install(table, self._triggers)
            if not initial:
                self._log_existing_rows(table)
        return notes

    def _log_existing_rows(self, table: _Table) -> None:
        # A table created during the trial: every row it holds is an insert.
        name = table.name.replace("'", "''")
        self.conn.execute(
            f"INSERT INTO temp.{_LOG}(tbl, old, new) "
            f"SELECT '{name}', NULL, {table.values_sql('t')} FROM main.{_q(table.name)} AS t"
        )

    def take(self) -> tuple[WorldDelta, list[str]]:
        """Return the changes since the last call, and warnings about what was missed."""
        notes = self._sync_schema()
        version = self._pragma("data_version")
        if version != self._data_version:
            self._data_version = version
            notes.append(
                "another connection wrote to the world; those changes are not captured "
                "(give tools the recorded connection)"
            )
        rows = self.conn.execute(
            f"SELECT id, tbl, old, new FROM temp.{_LOG} WHERE id > ? ORDER BY id", (self._mark,)
        ).fetchall()
        if not rows:
            return {}, notes
        self._mark = rows[-1][0]
        builder = DeltaBuilder()
        for _, tbl, old, new in rows:
            table = self._tables[tbl]
            before = table.row(json.loads(old)) if old is not None else None
            after = table.row(json.loads(new)) if new is not None else None
            if before and after and before[0] != after[0]:
                # The primary key itself changed: a delete of the old key, an insert of the new.
                builder.add(tbl, before[0], before[1], None)
                builder.add(tbl, after[0], None, after[1])
            elif before:
                builder.add(tbl, before[0], before[1], after[1] if after else None)
            elif after:
                builder.add(tbl, after[0], None, after[1])
        return builder.build(), notes

    def close(self) -> None:
        """Remove the triggers and the change log from the connection."""
        names = self.conn.execute(
            "SELECT name FROM temp.sqlite_master "
            "WHERE type = 'trigger' AND name LIKE '\\_replay\\_%' ESCAPE '\\'"
        ).fetchall()
        for (name,) in names:
            self.conn.execute(f"DROP TRIGGER IF EXISTS temp.{_q(name)}")
        self.conn.execute(f"DROP TABLE IF EXISTS temp.{_LOG}")


def world_hash(conn: sqlite3.Connection) -> str:
    """Return the first 16 hex digits of a sha256 of the database's content.

    Content, not bytes: the schema and every row in key order, so a world
    built from the same fixture hashes the same in a file or in memory.
    Costs one read of the database; pass ``Pins(fixture_hash=...)`` to skip it.
    """
    digest = hashlib.sha256()
    schema = conn.execute(
        "SELECT type, name, sql FROM main.sqlite_master "
        "WHERE name NOT LIKE 'sqlite_%' ORDER BY type, name"
    ).fetchall()
    for kind, name, sql in schema:
        digest.update(json.dumps([kind, name, sql]).encode())
        if kind == "table" and not (sql or "").upper().startswith("CREATE VIRTUAL"):
            pk = [r[1] for r in sorted(conn.execute(f"PRAGMA main.table_info({_q(name)})")) if r[5]]
            order = ", ".join(_q(c) for c in pk) if pk else "rowid"
            for row in conn.execute(f"SELECT * FROM main.{_q(name)} ORDER BY {order}"):
                digest.update(repr(row).encode())
    return digest.hexdigest()[:16]
