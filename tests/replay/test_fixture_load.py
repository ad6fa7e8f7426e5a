"""Loading a ``.db`` fixture: its own bytes and its hash, in one read, held once."""

from __future__ import annotations

import sqlite3
from pathlib import Path
from typing import Any

import pytest

from recorder import FixtureError, world_hash
from replay import Fixture
from replay.worlds import _files
from tests.helpers import SHOP_FIXTURE

as_bytes = pytest.mark.skipif(
    not hasattr(sqlite3.Connection, "serialize"),
    reason="Python 3.10 cannot deserialize: a .db fixture is copied with the backup API",
)


@pytest.fixture
def shop_db(tmp_path: Path) -> Path:
    path = tmp_path / "shop.db"
    conn = sqlite3.connect(path)
    conn.executescript(SHOP_FIXTURE.read_text())
    conn.close()
    return path


@as_bytes
def test_a_database_file_is_kept_as_its_own_bytes_and_hashes_as_its_script(shop_db: Path) -> None:
    fixture = Fixture.load(shop_db)
    assert fixture.data == shop_db.read_bytes() and fixture.size == shop_db.stat().st_size
    assert fixture.hash == Fixture.load(SHOP_FIXTURE).hash
    world = fixture.open()
    assert world_hash(world.conn) == fixture.hash
    world.close()
    # A worker's copy keeps the bytes it was sent (no second copy, no second hash).
    assert fixture.data is not None
    shipped = Fixture.from_bytes(fixture.data, fixture.source, fixture.hash)
    assert shipped.data is fixture.data and shipped.hash == fixture.hash
    assert Fixture(fixture.data, "again").hash == fixture.hash  # (no hash given: computed)


def test_a_wal_database_is_read_through_sqlite_with_what_its_wal_holds(tmp_path: Path) -> None:
    path = tmp_path / "wal.db"
    writer = sqlite3.connect(path)
    writer.execute("pragma journal_mode = wal")
    writer.executescript(SHOP_FIXTURE.read_text())
    writer.execute("update orders set status = 'cancelled' where id = 4812")
    writer.commit()  # (the writer stays open: the change stays in the -wal file)
    try:
        fixture = Fixture.load(path)
        world = fixture.open()
        got = world.conn.execute("select status from orders where id = 4812").fetchone()
        assert got == ("cancelled",)
        assert fixture.hash == world_hash(writer)
        world.close()
    finally:
        writer.close()


@as_bytes
def test_a_wal_database_with_nothing_in_its_wal_is_read_as_its_file(tmp_path: Path) -> None:
    path = tmp_path / "wal.db"
    writer = sqlite3.connect(path)
    writer.execute("pragma journal_mode = wal")
    writer.executescript(SHOP_FIXTURE.read_text())
    writer.close()  # (a clean close checkpoints: the -wal file goes, the WAL mode stays)
    fixture = Fixture.load(path)
    on_disk = path.read_bytes()
    assert on_disk[18:20] == b"\x02\x02" and fixture.data is not None
    assert fixture.data[18:20] == b"\x01\x01"  # (a world cannot be made from a WAL image)
    assert fixture.data[:18] == on_disk[:18] and fixture.data[20:] == on_disk[20:]
    world = fixture.open()
    assert world_hash(world.conn) == fixture.hash == Fixture.load(SHOP_FIXTURE).hash
    world.close()


@as_bytes
def test_a_file_written_while_it_is_read_is_refused(
    shop_db: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    def hash_while_someone_writes(conn: sqlite3.Connection, **kw: Any) -> str:
        with shop_db.open("ab") as f:  # (not through SQLite: no lock stops it)
            f.write(b"\0" * 4096)
        return world_hash(conn, **kw)

    monkeypatch.setattr(_files, "world_hash", hash_while_someone_writes)
    with pytest.raises(FixtureError, match="the file changed while it was read"):
        Fixture.load(shop_db)


@as_bytes
def test_a_sqlite_writer_waits_for_the_read(shop_db: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    refused = []

    def hash_while_sqlite_writes(conn: sqlite3.Connection, **kw: Any) -> str:
        writer = sqlite3.connect(shop_db, timeout=0)
        try:
            with writer:
                writer.execute("update orders set status = 'cancelled' where id = 4812")
        except sqlite3.OperationalError as exc:  # (database is locked: our read holds it)
            refused.append(str(exc))
        finally:
            writer.close()
        return world_hash(conn, **kw)

    monkeypatch.setattr(_files, "world_hash", hash_while_sqlite_writes)
    fixture = Fixture.load(shop_db)
    assert refused and "locked" in refused[0]
    assert fixture.hash == Fixture.load(SHOP_FIXTURE).hash


@as_bytes
def test_a_wal_writer_committing_during_the_hash_makes_the_load_copy_what_it_hashed(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """In WAL mode a writer does not wait for the read: its commit goes to the -wal, so
    the file's bytes are no longer the content hashed. The load sees it and copies the
    database through SQLite instead: the fixture's hash is of the world it holds."""
    path = tmp_path / "wal.db"
    setup = sqlite3.connect(path)
    setup.execute("pragma journal_mode = wal")
    setup.executescript(SHOP_FIXTURE.read_text())
    setup.close()

    def hash_while_sqlite_writes(conn: sqlite3.Connection, **kw: Any) -> str:
        writer = sqlite3.connect(path)
        with writer:
            writer.execute("update orders set status = 'cancelled' where id = 4812")
        writer.close()  # (not the last connection: the -wal keeps the commit)
        return world_hash(conn, **kw)

    monkeypatch.setattr(_files, "world_hash", hash_while_sqlite_writes)
    fixture = Fixture.load(path)
    monkeypatch.undo()
    world = fixture.open()
    status = world.conn.execute("select status from orders where id = 4812").fetchone()[0]
    assert world_hash(world.conn) == fixture.hash and status == "cancelled"
    world.close()


@pytest.mark.parametrize(
    ("content", "message"),
    [
        (b"", "defines no tables"),
        (b"not a database, just bytes" * 200, "cannot build the world (file is not a database)"),
    ],
)
def test_unusable_database_files_are_one_line_errors(
    tmp_path: Path, content: bytes, message: str
) -> None:
    path = tmp_path / "bad.db"
    path.write_bytes(content)
    with pytest.raises(FixtureError) as info:
        Fixture.load(path)
    assert str(info.value).startswith(f"{path}: ") and message in str(info.value)


def test_a_pin_of_another_version_is_checked_once(
    shop_db: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    fixture = Fixture.load(shop_db)
    calls = []
    real = world_hash

    def counted(conn: sqlite3.Connection, **kw: Any) -> str:
        calls.append(kw)
        return real(conn, **kw)

    monkeypatch.setattr("replay.worlds._world.world_hash", counted)
    assert fixture.matches("8acfd82b21d63767") and fixture.matches("8acfd82b21d63767")
    assert not fixture.matches("fedcba9876543210")
    assert calls == [{"like": "8acfd82b21d63767"}, {"like": "fedcba9876543210"}]
    assert fixture.matches(fixture.hash) and len(calls) == 2  # (its own: no hashing)
