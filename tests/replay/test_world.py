"""Worlds: fixtures from .sql/.json/.db, a fresh world per trial, reset by rollback."""

from __future__ import annotations

import gc
import json
import sqlite3
import weakref
from pathlib import Path

import pytest

from examples.shop import INSTRUCTION, make_tools, refund_policy, run_agent
from recorder import FixtureError, WarningEvent, read_cassette, record, tool, world_hash
from replay import Fixture, World
from replay.stub_llm import StubLLM
from tests.helpers import REPO, SHOP_FIXTURE

ROWS = {
    "orders": [
        {"id": 1, "status": "paid", "total": 35.0},
        {"id": 2, "status": "paid", "total": 9.5},
    ]
}


@pytest.fixture
def shop() -> Fixture:
    return Fixture.load(SHOP_FIXTURE)


def snapshot(world: World) -> str:
    return world_hash(world.conn)


def test_three_kinds_of_fixture(tmp_path: Path) -> None:
    sql = tmp_path / "w.sql"
    sql.write_text(
        "create table orders (id integer primary key, status text, total float);"
        "insert into orders values (1, 'paid', 35.0), (2, 'paid', 9.5);"
    )
    js = tmp_path / "w.json"
    js.write_text(json.dumps(ROWS))
    db = tmp_path / "w.db"
    with sqlite3.connect(db) as conn:
        conn.executescript(sql.read_text())
    conn.close()
    worlds = [Fixture.load(p).open() for p in (sql, js, db)]
    for world in worlds:
        rows = world.conn.execute("select id, status, total from orders order by id").fetchall()
        assert rows == [(1, "paid", 35.0), (2, "paid", 9.5)]
        assert (
            world.conn.execute("pragma table_info(orders)").fetchall()[0][5] == 1
        )  # id is the key
    assert Fixture.load(sql).hash == Fixture.load(db).hash


def test_reset_undoes_everything_a_trial_did(shop: Fixture) -> None:
    world = shop.open()
    before = snapshot(world)
    assert before == shop.hash
    conn = world.conn
    with conn:  # a tool's own transaction: becomes a savepoint inside the trial
        conn.execute("insert into refunds (order_id, amount, reason) values (4812, 35, 'x')")
    conn.execute("update orders set status = 'refunded' where id = 4812")
    conn.commit()
    conn.execute("delete from inventory")
    conn.rollback()  # back to the last commit: inventory is whole again
    assert conn.execute("select count(*) from inventory").fetchone() == (2,)
    assert snapshot(world) != before
    world.reset()
    assert snapshot(world) == before and world.rebuilds == 0


def test_a_raw_commit_is_detected_and_rebuilt(shop: Fixture) -> None:
    world = shop.open()
    sqlite3.Connection.execute(world.conn, "DELETE FROM inventory")
    sqlite3.Connection.execute(world.conn, "COMMIT")
    sqlite3.Connection.execute(world.conn, "BEGIN")
    world.reset()
    assert world.rebuilds == 1 and snapshot(world) == shop.hash


def test_worlds_of_one_fixture_are_independent(shop: Fixture) -> None:
    first, second = shop.open(), shop.open()
    first.conn.execute("delete from orders")
    assert second.conn.execute("select count(*) from orders").fetchone() == (3,)
    assert snapshot(second) == shop.hash


def test_a_recorded_trial_on_a_world_then_replayed_as_a_delta(
    shop: Fixture, tmp_path: Path
) -> None:
    world = shop.open()
    path = tmp_path / "trial.cassette"
    with (
        StubLLM(refund_policy()) as llm,
        record(path, world=world.conn, pins={"mode": "sandbox"}) as rec,
    ):
        rec.answer(run_agent(INSTRUCTION, make_tools(world.conn), base_url=llm.openai_base_url))
    after = snapshot(world)
    cassette = read_cassette(path)
    assert cassette.header.fixture_hash == shop.hash
    world.reset()
    assert snapshot(world) == shop.hash
    # Review mode's world: the fixture plus the recorded net delta is the same world.
    assert cassette.footer is not None and cassette.footer.state_diff is not None
    world.apply(cassette.footer.state_diff)
    assert snapshot(world) == after


@pytest.mark.parametrize(
    ("name", "content", "message"),
    [
        ("bad.sql", "create tabel x (id);", 'cannot build the world (near "tabel": syntax error)'),
        ("bad.json", "[1, 2]", "a JSON fixture is an object of tables"),
        ("bad2.json", '{"t": [1]}', "table 't' must be a list of row objects"),
        ("bad.csv", "a,b", "unknown fixture type '.csv'"),
    ],
)
def test_unusable_fixtures_are_one_line_errors(
    tmp_path: Path, name: str, content: str, message: str
) -> None:
    path = tmp_path / name
    path.write_text(content)
    with pytest.raises(FixtureError) as info:
        Fixture.load(path)
    text = str(info.value)
    assert text.startswith(f"{path}: ") and message in text and "\n" not in text
    with pytest.raises(FixtureError, match="no such fixture file"):
        Fixture.load(tmp_path / "missing.sql")


@pytest.mark.parametrize("name", ["refund-4812.cassette", "format-2/refund-4812.cassette"])
def test_the_demo_case_fixture_is_the_recorded_one(name: str) -> None:
    # Committed before hash version 2: their pins are v1, checked with the v1 function.
    pin = read_cassette(REPO / "cassettes" / name).header.fixture_hash
    assert pin is not None and not pin.startswith("v2:")
    fixture = Fixture.load(SHOP_FIXTURE)
    assert fixture.hash.startswith("v2:") and fixture.hash != pin
    assert fixture.matches(pin) and fixture.matches(fixture.hash)
    assert not fixture.matches("0123456789abcdef")  # a v1 pin of another world
    assert not fixture.matches("v2:0123456789abcdef") and not fixture.matches("v9:x")


def test_a_recording_on_a_world_keeps_its_transaction(shop: Fixture, tmp_path: Path) -> None:
    world = shop.open()
    with record(tmp_path / "t.cassette", world=world.conn):
        world.conn.execute("update orders set status = 'cancelled' where id = 4812")
        world.conn.rollback()  # a tool's rollback: back to the last commit point
        assert world.conn.execute("select status from orders where id = 4812").fetchone() == (
            "paid",
        )
        world.conn.execute("delete from inventory")
    world.reset()
    assert world.rebuilds == 0 and snapshot(world) == shop.hash


def test_recording_keeps_a_plain_connections_pending_writes_pending(tmp_path: Path) -> None:
    conn = sqlite3.connect(tmp_path / "w.db")
    conn.execute("create table t (id integer primary key)")
    conn.commit()
    conn.execute("insert into t values (1)")  # pending, not committed
    with record(tmp_path / "t.cassette", world=conn):
        pass
    conn.rollback()
    assert conn.execute("select count(*) from t").fetchone() == (0,)


def test_a_raw_rollback_then_autocommitted_writes_are_undone(shop: Fixture) -> None:
    world = shop.open()
    sqlite3.Connection.execute(world.conn, "ROLLBACK")
    world.conn.execute("delete from inventory")  # autocommit now: survives a plain rollback
    world.reset()
    assert world.rebuilds == 1 and snapshot(world) == shop.hash


def test_db_paths_with_uri_characters_and_json_empty_tables(tmp_path: Path) -> None:
    odd = tmp_path / "shop #1?.db"
    with sqlite3.connect(odd) as conn:
        conn.execute("create table t (id integer primary key)")
        conn.execute("insert into t values (7)")
    conn.close()
    assert Fixture.load(odd).open().conn.execute("select id from t").fetchall() == [(7,)]
    js = tmp_path / "w.json"
    js.write_text(
        json.dumps(
            {
                "refunds": {"columns": {"id": "integer", "amount": "real"}, "pk": "id", "rows": []},
                "orders": [{"id": 1}, {"id": 2, "note": "late"}],
            }
        )
    )
    world = Fixture.load(js).open()
    assert world.conn.execute("select count(*) from refunds").fetchone() == (0,)
    assert world.conn.execute("select id, note from orders order by id").fetchall() == [
        (1, None),
        (2, "late"),
    ]
    js.write_text(json.dumps({"refunds": []}))
    with pytest.raises(FixtureError, match="has no rows: give"):
        Fixture.load(js)


def _trial(world: World, path: Path, *body: str) -> tuple[dict[str, object], list[str], int]:
    """One recorded trial on a reset world running ``body`` (SQL statements).

    Returns its state diff, its warnings and how many statements made or dropped a trigger.
    """
    world.reset()
    ddl: list[str] = []
    world.conn.set_trace_callback(lambda sql: ddl.append(sql) if "TRIGGER" in sql else None)

    @tool(writes=True)
    def act() -> None:
        for statement in body:
            sqlite3.Connection.execute(world.conn, statement)

    with record(path, world=world.conn):
        act()
    world.conn.set_trace_callback(None)
    cassette = read_cassette(path)
    assert cassette.footer is not None and cassette.footer.state_diff is not None
    diff = {
        table: [(c.key, c.before, c.after) for c in changes]
        for table, changes in cassette.footer.state_diff.items()
    }
    warnings = [e.message for e in cassette.events if isinstance(e, WarningEvent)]
    return diff, warnings, len(ddl)


def test_trials_on_a_world_share_its_capture_and_each_sees_only_its_own_changes(
    shop: Fixture, tmp_path: Path
) -> None:
    world = shop.open()
    for n in range(3):  # the capture armed with the world serves every trial: no trigger DDL
        update = f"UPDATE orders SET total = {n} WHERE id = 4812"
        diff, warnings, ddl = _trial(world, tmp_path / f"{n}.cassette", update)
        assert diff == {"orders": [([4812], {"total": 35.0}, {"total": n})]}
        assert warnings == [] and ddl == 0
    # A trial that creates a table: captured; the next trial starts from the fixture's schema.
    create = ("CREATE TABLE extra (k TEXT PRIMARY KEY)", "INSERT INTO extra VALUES ('a')")
    diff, warnings, _ = _trial(world, tmp_path / "new.cassette", *create)
    assert diff == {"extra": [(["a"], None, {"k": "a"})]} and warnings == []
    diff, warnings, ddl = _trial(world, tmp_path / "after.cassette", "DELETE FROM ledger")
    assert list(diff) == ["ledger"] and warnings == [] and ddl == 0
    # A tool that commits for real: the world is rebuilt, and capture armed on it again.
    _trial(world, tmp_path / "raw.cassette", "COMMIT", "BEGIN")
    world.reset()
    assert world.rebuilds == 1 and snapshot(world) == shop.hash
    ship = "UPDATE orders SET status = 'shipped' WHERE id = 4812"
    diff, warnings, ddl = _trial(world, tmp_path / "rebuilt.cassette", ship)
    assert diff == {"orders": [([4812], {"status": "paid"}, {"status": "shipped"})]}
    assert warnings == [] and ddl == 0


def test_a_world_no_longer_used_is_freed_with_its_capture(shop: Fixture) -> None:
    world = shop.open()
    conn = weakref.ref(world.conn)
    del world
    gc.collect()
    assert conn() is None
