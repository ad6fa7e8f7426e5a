"""Worlds: a fixture loaded once, and a fresh in-memory copy of it per trial.

A ``Fixture`` is built once from a ``.sql`` script, a JSON dict-of-tables or
a ``.db`` file, and kept as bytes (a ``.db`` file's own, read in the read
transaction that hashes it; ``Connection.serialize`` of the others): worlds
travel as bytes, with no shared file. A ``World`` is an in-memory database
made from those bytes; everything a trial does happens inside one
transaction that ``reset()`` rolls back, so a reset costs what the trial
changed, not the size of the fixture. Tools get ``world.conn``: their
``commit()`` (and ``with conn:``) mark a savepoint instead of ending that
transaction, and their ``rollback()`` returns to it. A tool that ends the
transaction itself (a raw ``COMMIT``) is detected; the next reset then
rebuilds the world from the fixture's bytes (correct, but costs the
fixture's size).
"""

from __future__ import annotations

import functools
import json
import sqlite3
import threading
from pathlib import Path
from types import TracebackType
from typing import Any, Literal

from recorder import FixtureError, WorldDelta, keep_capture, world_hash

from ._files import load_json, read_database, rollback_journal

_SAVEPOINT = "_replay_commit"


class TrialConnection(sqlite3.Connection):
    """The connection a trial's tools use: commits become savepoints inside the trial."""

    def commit(self) -> None:
        """Keep the writes so far (a savepoint), without ending the trial's transaction."""
        if self.in_transaction:
            super().execute(f"RELEASE {_SAVEPOINT}")
            super().execute(f"SAVEPOINT {_SAVEPOINT}")

    def keep(self) -> None:
        """Make everything so far survive ``rollback()`` (what ``commit()`` does here).

        Recorders call it after installing their TEMP change capture.
        """
        self.commit()

    def rollback(self) -> None:
        """Undo the writes since the last commit."""
        if self.in_transaction:
            super().execute(f"ROLLBACK TO {_SAVEPOINT}")

    def __enter__(self) -> TrialConnection:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> Literal[False]:
        if exc is None:
            self.commit()
        else:
            self.rollback()
        return False


class Fixture:
    """A starting world, built once.

    Attributes:
        source: Where it was built from.
        hash: Content hash (schema and rows), the ``fixture_hash`` pin (``world_hash``;
            check a recorded one with ``matches``).
        size: Bytes of the database.
        collections: Tables that are document collections (records keyed by id,
            see ``_documents``): records may gain fields, so a case's
            references to their fields are not checked against the columns.
    """

    def __init__(
        self,
        template: sqlite3.Connection | bytes,
        source: str,
        hash: str | None = None,
        *,
        collections: frozenset[str] = frozenset(),
    ) -> None:
        """Keep ``template`` (a database, or its bytes); hash it unless ``hash`` is given.

        A connection is closed once serialized (kept as the template on Python 3.10).
        """
        self.source = source
        self.collections = collections
        self._data: bytes | None = None
        self._template: sqlite3.Connection | None = None
        self._lock = threading.Lock()
        self._pins: dict[str, bool] = {}
        """Recorded hashes other than ``hash`` checked so far, and whether each is this world's."""
        if isinstance(template, bytes):
            self._data = template
            if hash is None:
                conn = sqlite3.connect(":memory:")
                try:
                    self._fill(conn)
                    hash = world_hash(conn)
                finally:
                    conn.close()
            self.hash = hash
        else:
            self.hash = hash or world_hash(template)
            serialize = getattr(template, "serialize", None)
            if serialize is not None:
                self._data = rollback_journal(serialize())
                template.close()
            else:  # Python 3.10: no serialize; keep the template and copy it with backup
                self._template = template
        if self._data is not None:
            self.size = len(self._data)
        else:
            assert self._template is not None
            pages = self._template.execute("PRAGMA page_count").fetchone()[0]
            self.size = int(pages) * int(self._template.execute("PRAGMA page_size").fetchone()[0])

    @classmethod
    def load(cls, path: str | Path) -> Fixture:
        """Build a fixture from a ``.sql``, ``.json`` or ``.db``/``.sqlite`` file.

        A ``.db`` file is read once: its bytes, and its hash from SQLite reading
        it, in one read transaction (which SQLite writers wait for; a file whose
        size or times change meanwhile, written by something else, is refused).
        A database in WAL mode whose ``-wal`` file holds pages (or gets some
        while it is hashed: a WAL writer does not wait) is copied through SQLite
        instead: that costs twice its size more memory while loading. The rows
        are hashed through a memory map: a program other than SQLite that
        truncates the file meanwhile kills this process (SIGBUS).

        Raises:
            FixtureError: The file is missing, changed while it was read, or
                cannot be turned into a world.
        """
        path = Path(path)
        if not path.exists():
            raise FixtureError("no such fixture file", path=path)
        suffix = path.suffix.lower()
        # check_same_thread=False: on Python 3.10 this connection stays the template that
        # worlds are copied from, in whichever thread runs the trial.
        conn = sqlite3.connect(":memory:", check_same_thread=False)
        collections: frozenset[str] = frozenset()
        try:
            if suffix == ".sql":
                conn.executescript(path.read_text(encoding="utf-8"))
            elif suffix == ".json":
                collections = load_json(conn, json.loads(path.read_text(encoding="utf-8")))
            elif suffix in (".db", ".sqlite", ".sqlite3"):
                read = read_database(path) if hasattr(conn, "deserialize") else None
                if read is not None:
                    conn.close()
                    return cls(read[0], str(path), read[1])
                source = sqlite3.connect(f"{path.resolve().as_uri()}?mode=ro", uri=True)
                try:
                    source.backup(conn)
                finally:
                    source.close()
            else:
                raise FixtureError(
                    f"unknown fixture type {suffix!r}; use .sql, .json or .db", path=path
                )
            conn.commit()
            if not conn.execute("SELECT count(*) FROM sqlite_master").fetchone()[0]:
                raise FixtureError("defines no tables; an empty world cannot be graded", path=path)
            return cls(conn, str(path), collections=collections)
        except FixtureError:
            conn.close()
            raise
        except (sqlite3.Error, OSError, ValueError, TypeError, UnicodeDecodeError) as exc:
            conn.close()
            raise FixtureError(f"cannot build the world ({exc})", path=path) from None

    @property
    def data(self) -> bytes | None:
        """The database as bytes, to ship to workers (None on Python 3.10: no serialize)."""
        return self._data

    @classmethod
    def from_bytes(cls, data: bytes, source: str, hash: str) -> Fixture:
        """Rebuild a fixture from ``data`` (see ``data``), e.g. in a worker process."""
        return cls(data, source, hash)

    def matches(self, pin: str) -> bool:
        """Whether ``pin``, a recorded ``fixture_hash``, is this fixture's.

        A pin of an older hash version (``world_hash``) is checked with that
        version's function, on a copy of the world: once per pin, costing the
        fixture's size in memory and time while it runs.
        """
        if pin == self.hash:
            return True
        if pin[:3] == self.hash[:3] == "v2:":  # (the same version: another world)
            return False
        with self._lock:
            known = self._pins.get(pin)
            if known is None:
                conn = sqlite3.connect(":memory:")
                try:
                    self._fill_unlocked(conn)
                    known = world_hash(conn, like=pin) == pin
                except ValueError:  # of no version known here: not this world's
                    known = False
                finally:
                    conn.close()
                self._pins[pin] = known
        return known

    def open(self) -> World:
        """Return a fresh world for one trial (costs the fixture's size, once)."""
        conn = sqlite3.connect(
            ":memory:", factory=TrialConnection, isolation_level=None, check_same_thread=False
        )
        self._fill(conn)
        return World(self, conn)

    def _fill(self, conn: sqlite3.Connection) -> None:
        if self._data is not None:
            conn.deserialize(self._data)  # type: ignore[attr-defined]
        else:
            with self._lock:  # one backup at a time from the shared template
                self._fill_unlocked(conn)

    def _fill_unlocked(self, conn: sqlite3.Connection) -> None:
        if self._data is not None:
            conn.deserialize(self._data)  # type: ignore[attr-defined]
        else:
            assert self._template is not None
            self._template.backup(conn)


_shipped: dict[str, Fixture] = {}
"""Fixtures sent to this (worker) process as bytes, by the driver's path for them."""


def ship(path: str, fixture: Fixture) -> None:
    """Make ``fixture`` what ``load_fixture(path)`` returns here (no file is read)."""
    _shipped[path] = fixture


def load_fixture(path: Path) -> Fixture:
    """Load a fixture once per file version (a Fixture is read-only bytes: safe to share).

    In a worker, a fixture the driver shipped as bytes is used instead of the file.
    """
    shipped = _shipped.get(str(path))
    if shipped is not None:
        return shipped
    return _cached_fixture(path, path.stat().st_mtime_ns)


@functools.lru_cache(maxsize=64)
def _cached_fixture(path: Path, mtime_ns: int) -> Fixture:
    return Fixture.load(path)


class World:
    """One trial's world. Use ``conn`` in tools; ``reset()`` between trials."""

    def __init__(self, fixture: Fixture, conn: TrialConnection) -> None:
        self.fixture = fixture
        self.conn = conn
        self.rebuilds = 0
        """How many resets had to rebuild from the fixture (a tool ended the transaction)."""
        sqlite3.Connection.execute(conn, "CREATE TEMP TABLE _replay_epoch (n)")
        # Change capture armed once, outside the trials' transaction: each trial's rollback
        # empties its log and keeps its triggers (a recording then costs no DDL).
        self._release_capture = keep_capture(conn)
        self._begin()

    def _begin(self) -> None:
        run = sqlite3.Connection.execute
        run(self.conn, "BEGIN")
        # A row that only survives the rollback if someone committed the transaction.
        run(self.conn, "INSERT INTO temp._replay_epoch VALUES (1)")
        run(self.conn, f"SAVEPOINT {_SAVEPOINT}")

    def reset(self) -> None:
        """Return to the fixture: roll the trial back (or rebuild if a tool committed it)."""
        run = sqlite3.Connection.execute
        # Without a transaction a tool ended it (raw COMMIT or ROLLBACK): what followed may
        # be committed, so rebuild; with one, a marker row that survived says COMMIT, BEGIN.
        ended = not self.conn.in_transaction
        if not ended:
            run(self.conn, "ROLLBACK")
        if ended or run(self.conn, "SELECT count(*) FROM temp._replay_epoch").fetchone()[0]:
            self.rebuilds += 1
            run(self.conn, "DELETE FROM temp._replay_epoch")
            self._release_capture()  # armed on the database being replaced
            if self.fixture.data is not None:  # free this world before its copy is made
                self.conn.deserialize(_empty())  # type: ignore[attr-defined]
            self.fixture._fill(self.conn)
            self._release_capture = keep_capture(self.conn)
        self._begin()

    def apply(self, delta: WorldDelta) -> None:
        """Apply a recorded delta (review and offline modes), in order, by primary key.

        Raises:
            FixtureError: The delta does not fit this world (recorded on another fixture).
        """
        try:
            self._apply(delta)
        except (sqlite3.Error, OverflowError) as exc:
            raise FixtureError(
                f"the recorded changes do not apply to this world ({exc}); "
                "was the cassette recorded on another fixture?",
                path=self.fixture.source,
            ) from None

    def _apply(self, delta: WorldDelta) -> None:
        apply_delta(self.conn, delta, source=self.fixture.source)

    def close(self) -> None:
        """Drop the world."""
        self._release_capture()
        self.conn.close()


@functools.cache
def _empty() -> bytes:
    """A database with nothing in it (one page): what a world holds while it is rebuilt."""
    conn = sqlite3.connect(":memory:")
    try:
        conn.execute("PRAGMA user_version = 1")  # (a write: the page exists to serialize)
        return conn.serialize()  # type: ignore[attr-defined,no-any-return]
    finally:
        conn.close()


def _quoted(name: str) -> str:
    """An SQL identifier, quoted: a name from a cassette is only ever a name."""
    return '"' + str(name).replace('"', '""') + '"'


def apply_delta(conn: sqlite3.Connection, delta: WorldDelta, *, source: Any = None) -> None:
    """Apply a delta to ``conn``, in order, by primary key (``World.apply``; promote undoes one).

    Raises:
        FixtureError: It changes a table the database lacks.
        sqlite3.Error: A change does not fit (the delta is of another world).
    """
    keys = primary_keys(conn)
    for table, changes in delta.items():
        pk = keys.get(table)
        if pk is None:
            raise FixtureError(
                f"the delta changes table {table!r}, which the world lacks",
                path=source,
            )
        where = " AND ".join(f"{_quoted(c)} IS ?" for c in pk)
        for change in changes:
            if change.before is not None:
                if change.after is None:
                    conn.execute(f"DELETE FROM {_quoted(table)} WHERE {where}", change.key)
                    continue
                sets = ", ".join(f"{_quoted(c)} = ?" for c in change.after)
                conn.execute(
                    f"UPDATE {_quoted(table)} SET {sets} WHERE {where}",
                    (*change.after.values(), *change.key),
                )
            elif change.after is not None:
                row = dict(change.after)
                if pk == ["rowid"]:
                    row["rowid"] = change.key[0]
                cols = ", ".join(_quoted(c) for c in row)
                marks = ", ".join("?" for _ in row)
                conn.execute(
                    f"INSERT INTO {_quoted(table)} ({cols}) VALUES ({marks})",
                    tuple(row.values()),
                )


def primary_keys(conn: sqlite3.Connection) -> dict[str, list[str]]:
    tables = [
        r[0]
        for r in conn.execute(
            "SELECT name FROM sqlite_master "
            "WHERE type = 'table' AND name NOT LIKE 'sqlite\\_%' ESCAPE '\\'"
        )
    ]
    keys = {}
    for name in tables:
        info = conn.execute(f"PRAGMA table_info({_quoted(name)})").fetchall()
        keys[name] = [r[1] for r in sorted(info, key=lambda r: r[5]) if r[5]] or ["rowid"]
    return keys
