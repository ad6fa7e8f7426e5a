"""The world's content hash (the ``fixture_hash`` pin), in each of its versions.

A pin is compared with the function of its own version: ``world_hash(conn,
like=pin) == pin``. See the design notes ("Fixture hash") for why there are two.
"""

from __future__ import annotations

import hashlib
import json
import re
import sqlite3

# The hash's own encoding, frozen with its version: it must not follow the cassette
# codec's options (``_codec`` is where cassettes' msgpack lives).
import msgpack

V2_PREFIX = "v2:"
"""Marks a version-2 hash; a version-1 hash is 16 hex digits, unmarked."""
_V1 = re.compile(r"[0-9a-f]{16}")
_ROWS = 512
"""Rows packed per call: enough to keep the per-call cost low, few enough to stay small."""
_END_OF_ROWS = msgpack.packb(None)
"""Ends a table's rows (a row is an array, never nil)."""


def _q(name: str) -> str:
    return '"' + name.replace('"', '""') + '"'


def world_hash(conn: sqlite3.Connection, *, like: str | None = None) -> str:
    """Return a hash of the database's content: its schema and every row in key order.

    Content, not bytes: a world built from the same fixture hashes the same in
    a file or in memory, whatever its page layout; values differ by SQLite
    type too (NULL, ``''``, ``0``, ``0.0`` and ``x''`` all differ). Costs one
    read of the database; pass ``Pins(fixture_hash=...)`` to skip it.

    Versions (``like`` picks one; without it, the current one):

    - 2, ``"v2:"`` and 16 hex digits (the current one): a sha256 of each
      ``sqlite_master`` row (type, name, sql; ordered by type, name; ``sqlite_*``
      left out) as JSON, each table's (not virtual ones) followed by its rows in
      primary-key order (rowid without one), each row a msgpack array of its
      values (integer, float64, str, bin, nil) then a msgpack nil. The rows are
      packed in bulk, at C speed: 6 to 9 times faster than version 1 (1 GB:
      2-3 s against 11-25 s, ``bench/world_reset.py``).
    - 1, 16 hex digits: the same schema, then each row's Python ``repr``.
      Recorded pins from before version 2 are of this form.

    Args:
        conn: The world (only ``main`` is read).
        like: A recorded hash: return this world's hash in that hash's version,
            so that ``world_hash(conn, like=pin) == pin`` says whether ``conn``
            holds the pinned world.

    Raises:
        ValueError: ``like`` is of no version known here.
    """
    if like is None or like.startswith(V2_PREFIX):
        return V2_PREFIX + _v2(conn)
    if _V1.fullmatch(like):
        return _v1(conn)
    raise ValueError(
        f"{like!r} is no fixture hash this version knows (v2: 'v2:' and 16 hex digits; "
        "v1: 16 hex digits); was it recorded by a newer agent-replay?"
    )


def _schema(cursor: sqlite3.Cursor) -> list[tuple[str, str, str | None]]:
    """Every table, index, view and trigger (not SQLite's own): type, name, SQL, in order."""
    return cursor.execute(
        "SELECT type, name, sql FROM main.sqlite_master "
        "WHERE name NOT LIKE 'sqlite\\_%' ESCAPE '\\' ORDER BY type, name"
    ).fetchall()


def _v2(conn: sqlite3.Connection) -> str:
    digest = hashlib.sha256()
    cursor = conn.cursor()
    cursor.row_factory = None
    pack = msgpack.Packer(use_bin_type=True, autoreset=True).pack
    schema = _schema(cursor)
    for kind, name, sql in schema:
        digest.update(json.dumps([kind, name, sql]).encode())
        if kind != "table" or (sql or "").upper().startswith("CREATE VIRTUAL"):
            continue
        info = cursor.execute(f"PRAGMA main.table_xinfo({_q(name)})").fetchall()
        pk = [r[1] for r in sorted(info, key=lambda r: r[5]) if r[5]]
        order = ", ".join(_q(c) for c in pk) if pk else "_rowid_"
        # The columns ``SELECT *`` gives (hidden 1: a virtual table's), each as ``+col``
        # under a plain alias: a no-op on the value that leaves it no declared type or
        # bracketed name, so a connection's converters (``detect_types``) stay out of it.
        cols = ", ".join(f"+{_q(r[1])} AS c{i}" for i, r in enumerate(info) if r[6] != 1)
        cursor.execute(f"SELECT {cols} FROM main.{_q(name)} ORDER BY {order}")
        while rows := cursor.fetchmany(_ROWS):
            packed = pack(rows)
            # Drop the list's array header: the stream is the rows' arrays back to back,
            # whatever the chunking (header: 1 byte up to 15 items, 3 up to 65535).
            digest.update(memoryview(packed)[1 if len(rows) < 16 else 3 :])
        digest.update(_END_OF_ROWS)
    return digest.hexdigest()[:16]


def _v1(conn: sqlite3.Connection) -> str:
    digest = hashlib.sha256()
    cursor = conn.cursor()
    cursor.row_factory = None
    schema = _schema(cursor)
    for kind, name, sql in schema:
        digest.update(json.dumps([kind, name, sql]).encode())
        if kind == "table" and not (sql or "").upper().startswith("CREATE VIRTUAL"):
            info = cursor.execute(f"PRAGMA main.table_info({_q(name)})").fetchall()
            pk = [r[1] for r in sorted(info, key=lambda r: r[5]) if r[5]]
            order = ", ".join(_q(c) for c in pk) if pk else "_rowid_"
            for row in cursor.execute(f"SELECT * FROM main.{_q(name)} ORDER BY {order}"):
                digest.update(repr(row).encode())
    return digest.hexdigest()[:16]
