"""The world after a trial as graders and assertions read it: a ``Protocol``, and SQLite's."""

from __future__ import annotations

import sqlite3
from collections.abc import Mapping
from typing import Any, Protocol

from ..worlds import decode_row, encode


class WorldView(Protocol):
    """Read access to the world after a trial."""

    def rows(self, table: str, where: Mapping[str, Any]) -> list[dict[str, Any]]:
        """Return the rows of ``table`` whose columns equal ``where``."""
        ...

    def get(self, table: str, key: Any) -> dict[str, Any] | None:
        """Return the row of ``table`` with primary key ``key``, if any."""
        ...

    def decode(self, table: str, row: Mapping[str, Any]) -> dict[str, Any]:
        """Return a row's stored values (e.g. from a delta) as field values."""
        ...


class SqliteWorld:
    """A ``WorldView`` over a SQLite connection; identifiers are checked, values bound."""

    def __init__(self, conn: sqlite3.Connection) -> None:
        self.conn = conn
        self._info: dict[str, tuple[list[str], list[str]]] = {}
        self._kinds: dict[str, dict[str, str]] = {}

    def _table(self, table: str) -> tuple[list[str], list[str]]:
        if table not in self._info:
            info = self.conn.execute(
                f'PRAGMA table_info("{table.replace(chr(34), "")}")'
            ).fetchall()
            if not info:
                raise LookupError(f"no table {table!r} in the world")
            pk = [r[1] for r in sorted(info, key=lambda r: r[5]) if r[5]] or ["rowid"]
            self._info[table] = ([r[1] for r in info], pk)
            self._kinds[table] = {r[1]: (r[2] or "").upper() for r in info}
        return self._info[table]

    def _select(self, table: str, conditions: Mapping[str, Any]) -> list[dict[str, Any]]:
        columns, _ = self._table(table)
        kinds = self._kinds[table]
        for name in conditions:
            if name not in columns and name != "rowid":
                raise LookupError(f"table {table!r} has no column {name!r}")
        where = " AND ".join(f'"{c}" IS ?' for c in conditions) or "1"
        values = tuple(encode(kinds.get(c, ""), v) for c, v in conditions.items())
        cursor = self.conn.cursor()
        cursor.row_factory = None
        sql = f'SELECT {", ".join(f"{chr(34)}{c}{chr(34)}" for c in columns)} FROM "{table}"'
        found = cursor.execute(f"{sql} WHERE {where}", values).fetchall()
        # Document collections' JSON and boolean columns read as the values they hold.
        return [decode_row(kinds, dict(zip(columns, r, strict=True))) for r in found]

    def rows(self, table: str, where: Mapping[str, Any]) -> list[dict[str, Any]]:
        """Return the rows of ``table`` whose columns equal ``where``."""
        return self._select(table, where)

    def get(self, table: str, key: Any) -> dict[str, Any] | None:
        """Return the row of ``table`` with primary key ``key``, if any."""
        _, pk = self._table(table)
        values = key if isinstance(key, tuple) else (key,)
        if len(values) != len(pk):
            raise LookupError(f"table {table!r} is keyed by {', '.join(pk)}; got {key!r}")
        found = self._select(table, dict(zip(pk, values, strict=True)))
        return found[0] if found else None

    def decode(self, table: str, row: Mapping[str, Any]) -> dict[str, Any]:
        """Return a row's stored values (e.g. from a delta) as field values."""
        self._table(table)
        return decode_row(self._kinds[table], row)
