"""Reading fixture files: a database file with its hash in one read, JSON tables."""

from __future__ import annotations

import os
import sqlite3
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from recorder import FixtureError, world_hash

from ._documents import is_documents, load_collection

_MAP = 1 << 40
"""Bytes of a database file mapped while it is hashed (SQLite caps it at its build's maximum)."""


def _identity(path: Path) -> tuple[int, int, int, int]:
    """What changes when anything writes the file: its inode, size, mtime and ctime."""
    st = os.stat(path)
    return st.st_ino, st.st_size, st.st_mtime_ns, st.st_ctime_ns


def _holds(wal: Path) -> bool:
    """Whether a WAL database's ``-wal`` file holds pages (content not in the file).

    An empty one (as of a read snapshot) holds nothing: the file is the database, and no
    checkpoint can change it while the snapshot is read. A writer does not wait for that
    snapshot, though: it commits to the ``-wal``, which then holds pages.
    """
    return wal.exists() and wal.stat().st_size > 0


def read_database(path: Path) -> tuple[bytes, str] | None:
    """A database file's bytes and content hash, read in one read transaction.

    One connection holds a read transaction from start to end: no SQLite
    writer can commit meanwhile (each waits, or gets "database is locked"),
    so the bytes are the database that was hashed. (In WAL mode a writer does
    not wait: it commits to the ``-wal``, found there after the hash, and the
    load falls back to a copy through SQLite: None.) Another one hashes the
    rows through a memory map (no read call per page: a fifth less CPU at
    1 GB), and is closed before the bytes are read, so the process holds the
    database once, never twice (a mapped page counts as resident). A writer
    other than SQLite (``cp`` over the file) is caught by the file's size and
    times, checked before and after; one that truncates the file while it is
    hashed kills the process with SIGBUS (the price of the map). None for a
    database in WAL mode whose ``-wal`` file holds pages: its content is not
    all in its file.

    Raises:
        FixtureError: It has no tables, or something else wrote the file while it was read.
    """
    uri = f"{path.resolve().as_uri()}?mode=ro"
    before = _identity(path)
    holder = sqlite3.connect(uri, uri=True, isolation_level=None)
    try:
        holder.execute("BEGIN")
        # The first read takes the shared lock (and says whether this is a database at all).
        if not holder.execute("SELECT count(*) FROM sqlite_master").fetchone()[0]:
            raise FixtureError("defines no tables; an empty world cannot be graded", path=path)
        wal = Path(f"{path}-wal")
        in_wal = str(holder.execute("PRAGMA journal_mode").fetchone()[0]).lower() == "wal"
        if in_wal and _holds(wal):
            return None
        hashing = sqlite3.connect(uri, uri=True, isolation_level=None)
        try:
            hashing.execute(f"PRAGMA mmap_size = {_MAP}")
            hashing.execute("BEGIN")
            digest = world_hash(hashing)
        finally:
            hashing.close()  # (unmaps the file before its bytes are read)
        if in_wal and _holds(wal):
            return None  # (a writer committed meanwhile: the hash may be of its content)
        data = path.read_bytes()
        after = _identity(path)
    finally:
        holder.close()
    if after != before or len(data) != after[1]:
        raise FixtureError(
            "the file changed while it was read (written by something other than SQLite?); "
            "load it again once it is written",
            path=path,
        )
    return rollback_journal(data), digest


def rollback_journal(data: bytes) -> bytes:
    """A database image as one in rollback-journal mode (a WAL one's copy says WAL).

    A world made from an image that says WAL cannot be used (SQLite looks for
    its ``-wal`` file); the content is the same either way.
    """
    if data[18:20] != b"\x02\x02":  # (the header's write and read versions: 2 is WAL)
        return data
    return b"".join((data[:18], b"\x01\x01", data[20:]))


def load_json(conn: sqlite3.Connection, data: Any) -> frozenset[str]:
    """Tables from ``{"table": [rows...]}``, ``{"table": {"pk": "col", "rows": [...]}}``.

    Also document collections, ``{"users": {"mia_li_3668": {...}}}`` (see ``_documents``).

    Without an explicit ``pk``, a column named ``id`` is the primary key. An
    empty table needs its ``columns`` (``{"id": "integer", "name": "text"}``).
    Returns the names of the document collections.
    """
    if not isinstance(data, Mapping):
        raise ValueError('a JSON fixture is an object of tables: {"table": [rows...]}')
    import sqlite_utils  # (here, not at import: it imports pandas and numpy where installed)

    db = sqlite_utils.Database(conn)
    collections = set()
    for table, spec in data.items():
        if is_documents(spec):
            load_collection(conn, table, spec)
            collections.add(table)
            continue
        if isinstance(spec, Mapping):
            rows, pk, columns = spec.get("rows", []), spec.get("pk"), spec.get("columns")
        else:
            rows, pk, columns = spec, None, None
        if not isinstance(rows, list) or not all(isinstance(r, Mapping) for r in rows):
            raise ValueError(f"table {table!r} must be a list of row objects")
        if pk is None and rows and all("id" in r for r in rows):
            pk = "id"
        if columns:
            types = {"integer": int, "real": float, "float": float, "text": str, "blob": bytes}
            try:
                db.table(table).create({c: types[t.lower()] for c, t in columns.items()}, pk=pk)
            except (KeyError, AttributeError):
                raise ValueError(
                    f"table {table!r}: columns map names to {', '.join(types)}"
                ) from None
        elif not rows:
            raise ValueError(
                f'table {table!r} has no rows: give {{"columns": {{"id": "integer", ...}}, '
                '"rows": []}} to create it empty'
            )
        if pk is not None and rows and not any(pk in r for r in rows) and not columns:
            raise ValueError(f"table {table!r}: pk {pk!r} is not a column of its rows")
        db.table(table).insert_all(rows, pk=pk, alter=True)
    return frozenset(collections)
