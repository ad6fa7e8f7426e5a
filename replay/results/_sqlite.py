"""How the store's SQLite connections wait for one another: many processes write one store.

SQLite's busy timeout (``sqlite3.connect(timeout=...)``) makes a connection wait for a lock
another holds, but not always: a transaction that has read and then wants to write (a
deferred ``BEGIN``, as sqlite-utils' writers open) is told "database is locked" at once
when another connection holds the write lock or has written since its read (waiting
could deadlock), and so is ``PRAGMA journal_mode = WAL`` on a file not yet in WAL (it
reads, then needs the file alone). So every write here takes the write lock before it
reads (``BEGIN IMMEDIATE``, which the timeout covers), and the switch to WAL is retried.
"""

from __future__ import annotations

import random
import sqlite3
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING, TypeVar

from recorder import ConfigError

if TYPE_CHECKING:
    import sqlite_utils
    from sqlite_utils.db import Table, View

BUSY_SECONDS = 30.0
"""How long a store waits for another process's lock before it gives up."""

_BUSY_CODES = (5, 6)
"""SQLITE_BUSY and SQLITE_LOCKED: another connection's lock (the low byte of extended codes)."""

_T = TypeVar("_T")


def is_busy(exc: sqlite3.Error) -> bool:
    """Whether an error is another connection's lock, not a fault of the file or the SQL."""
    code = getattr(exc, "sqlite_errorcode", None)  # Python >= 3.11
    if code is not None:
        return (code & 0xFF) in _BUSY_CODES
    return str(exc).startswith(("database is locked", "database table is locked"))


def locked(path: Path) -> ConfigError:
    """The error of a store that stayed locked longer than ``BUSY_SECONDS``."""
    return ConfigError(
        f"the results store {path} stayed locked by another process for over "
        f"{BUSY_SECONDS:.0f} s (a long write, or a program holding a transaction open); "
        "try again when it is done"
    )


def _retried(action: Callable[[], _T], path: Path) -> _T:
    """``action``, again while it meets a lock, until ``BUSY_SECONDS`` have passed."""
    deadline = time.monotonic() + BUSY_SECONDS
    while True:
        try:
            return action()
        except sqlite3.OperationalError as exc:
            if not is_busy(exc):
                raise
            if time.monotonic() > deadline:
                raise locked(path) from None
        # A random pause, so that two processes that met do not meet again.
        time.sleep(random.uniform(0.002, 0.02))


class Database:
    """A store's connection, with sqlite-utils' ``Database`` over it made when first wanted.

    Reading a store is plain SQL on ``conn``; making and migrating tables and some writes
    use sqlite-utils (``utils``, or ``db[table]``), imported then: it imports pandas and
    numpy where installed, a third of a second a process that only reads.
    """

    def __init__(self, conn: sqlite3.Connection) -> None:
        self.conn = conn
        self._utils: sqlite_utils.Database | None = None

    @property
    def utils(self) -> sqlite_utils.Database:
        """sqlite-utils' ``Database`` over the connection."""
        if self._utils is None:
            import sqlite_utils

            self._utils = sqlite_utils.Database(self.conn)
        return self._utils

    def __getitem__(self, table: str) -> Table | View:
        return self.utils[table]

    def table_names(self) -> list[str]:
        """The tables' names."""
        rows = self.conn.execute("SELECT name FROM sqlite_master WHERE type = 'table'")
        return [name for (name,) in rows]


def connect(path: Path) -> sqlite3.Connection:
    """A connection to the store at ``path``, which it switches to WAL (readers never wait).

    Raises:
        ConfigError: Another process kept the file locked for ``BUSY_SECONDS``.
        sqlite3.DatabaseError: The file is not a SQLite database.
    """
    conn = sqlite3.connect(path, timeout=BUSY_SECONDS)
    try:
        _retried(lambda: conn.execute("PRAGMA journal_mode = WAL").fetchone(), path)
        # Each trial is one transaction: WAL + NORMAL keeps it atomic and survives a
        # crash of the process (a power cut may lose the last trials: --resume reruns
        # them); FULL would fsync every trial (~1.4 ms of the driver's time each).
        conn.execute("PRAGMA synchronous = NORMAL")
    except BaseException:
        conn.close()
        raise
    return conn


@contextmanager
def snapshot(conn: sqlite3.Connection) -> Iterator[None]:
    """Every read inside is of one state of the store: one read transaction.

    Writers go on meanwhile (WAL). Inside another transaction, that one is the snapshot.
    """
    if conn.in_transaction:
        yield
        return
    conn.execute("BEGIN")
    try:
        yield
    finally:
        conn.execute("COMMIT")  # (nothing written: it ends the read)


@contextmanager
def transaction(conn: sqlite3.Connection, path: Path) -> Iterator[sqlite3.Connection]:
    """One write transaction, holding the store's write lock from its start to its commit.

    What it reads, it reads under the lock: no other process writes in between, so a
    check and the write it decides (a run name free, a table missing) cannot be undone
    by another. sqlite-utils' writers inside it join it (as savepoints); it commits at
    the end, or rolls back on an exception.

    Raises:
        ConfigError: Another process kept the write lock for ``BUSY_SECONDS``.
    """
    _retried(lambda: conn.execute("BEGIN IMMEDIATE"), path)
    try:
        yield conn
        conn.commit()
    except BaseException as exc:
        conn.rollback()
        if isinstance(exc, sqlite3.OperationalError) and is_busy(exc):
            # In WAL mode nothing waits once the lock is held; a journal's commit may.
            raise locked(path) from None
        raise
