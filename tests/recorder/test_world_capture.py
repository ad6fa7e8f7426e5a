"""Each tool call records its world delta: rows inserted, deleted, updated (changed fields)."""

from __future__ import annotations

import sqlite3
from pathlib import Path

import pytest

from recorder import (
    RowChange,
    ToolEvent,
    WarningEvent,
    keep_capture,
    read_cassette,
    record,
    tool,
)
from recorder._capture import ChangeCapture


@pytest.fixture
def big_world(tmp_path: Path) -> sqlite3.Connection:
    conn = sqlite3.connect(tmp_path / "world.db")
    conn.execute("create table items (id integer primary key, sku text, qty integer, meta text)")
    conn.executemany(
        "insert into items values (?, ?, ?, ?)",
        ((i, f"SKU-{i}", i % 7, '{"a": 1}') for i in range(1, 100_001)),
    )
    conn.execute("create table tags (item_id integer, tag text, primary key (item_id, tag))")
    conn.execute("create table log (line text)")  # no primary key: keyed by rowid
    conn.commit()
    return conn


def tool_events(path: Path) -> list[ToolEvent]:
    return [e for e in read_cassette(path).events if isinstance(e, ToolEvent)]


def test_insert_into_100k_rows_records_exactly_that_row(
    big_world: sqlite3.Connection, cassette_path: Path
) -> None:
    @tool(writes=True)
    def add_item(sku: str, qty: int) -> int:
        with big_world:
            return int(
                big_world.execute(
                    "insert into items (sku, qty, meta) values (?, ?, null)", (sku, qty)
                ).lastrowid  # type: ignore[arg-type]
            )

    with record(cassette_path, world=big_world):
        add_item("NEW-1", 3)
    (event,) = tool_events(cassette_path)
    assert event.delta == {
        "items": [
            RowChange(key=[100_001], after={"id": 100_001, "sku": "NEW-1", "qty": 3, "meta": None})
        ]
    }
    assert read_cassette(cassette_path).footer.state_diff == event.delta  # type: ignore[union-attr]


def test_update_records_changed_fields_only(
    big_world: sqlite3.Connection, cassette_path: Path
) -> None:
    @tool(writes=True)
    def restock(item_id: int, qty: int) -> None:
        big_world.execute("update items set qty = ?, sku = sku where id = ?", (qty, item_id))

    with record(cassette_path, world=big_world):
        restock(5000, 99)
        restock(5000, 99)  # no field changes: no delta
    first, second = tool_events(cassette_path)
    assert first.delta == {
        "items": [RowChange(key=[5000], before={"qty": 5000 % 7}, after={"qty": 99})]
    }
    assert second.delta == {}


def test_delete_composite_key_rowid_and_net_diff(
    big_world: sqlite3.Connection, cassette_path: Path
) -> None:
    @tool(writes=True)
    def work() -> None:
        big_world.execute("delete from items where id = 7")
        big_world.execute("insert into tags values (1, 'red'), (1, 'blue')")
        big_world.execute("delete from tags where tag = 'blue'")
        big_world.execute("insert into log values ('hello')")

    @tool(writes=True)
    def undo_red() -> None:
        big_world.execute("delete from tags where tag = 'red'")
        big_world.execute("update log set line = 'bye'")

    with record(cassette_path, world=big_world):
        work()
        undo_red()
    first, second = tool_events(cassette_path)
    assert first.delta == {
        "items": [
            RowChange(key=[7], before={"id": 7, "sku": "SKU-7", "qty": 0, "meta": '{"a": 1}'})
        ],
        "tags": [RowChange(key=[1, "red"], after={"item_id": 1, "tag": "red"})],
        "log": [RowChange(key=[1], after={"line": "hello"})],
    }
    assert second.delta == {
        "tags": [RowChange(key=[1, "red"], before={"item_id": 1, "tag": "red"})],
        "log": [RowChange(key=[1], before={"line": "hello"}, after={"line": "bye"})],
    }
    footer = read_cassette(cassette_path).footer
    assert footer is not None
    # Net: the red tag came and went; the log row was inserted with its final value.
    assert footer.state_diff == {
        "items": first.delta["items"],
        "log": [RowChange(key=[1], after={"line": "bye"})],
    }


def test_a_failing_tool_records_what_it_changed_and_its_error(cassette_path: Path) -> None:
    conn = sqlite3.connect(":memory:")
    conn.execute("create table t (id integer primary key, v real)")

    @tool(writes=True)
    def half_done() -> None:
        conn.execute("insert into t values (1, 1.5)")
        raise RuntimeError("network down")

    with record(cassette_path, world=conn), pytest.raises(RuntimeError):
        half_done()
    (event,) = tool_events(cassette_path)
    assert event.error is not None and event.error.message == "network down"
    assert event.error.type == "builtins.RuntimeError"
    assert event.delta == {"t": [RowChange(key=[1], after={"id": 1, "v": 1.5})]}


def test_blobs_new_tables_and_changes_outside_tools(cassette_path: Path) -> None:
    conn = sqlite3.connect(":memory:")
    conn.execute("create table files (id integer primary key, data blob)")

    @tool(writes=True)
    def store() -> None:
        conn.execute("insert into files values (1, x'00ff')")
        conn.execute("create table extra (k text primary key, v integer)")
        conn.execute("insert into extra values ('a', 1)")

    with record(cassette_path, world=conn):
        store()
        conn.execute("insert into extra values ('b', 2)")  # the agent itself, not a tool
    events = read_cassette(cassette_path).events
    (call,) = [e for e in events if isinstance(e, ToolEvent)]
    assert call.delta == {
        "files": [RowChange(key=[1], after={"id": 1, "data": "00FF"})],
        "extra": [RowChange(key=["a"], after={"k": "a", "v": 1})],
    }
    (warning,) = [e for e in events if isinstance(e, WarningEvent)]
    assert warning.message == "the world changed outside any tool call"
    assert warning.delta == {"extra": [RowChange(key=["b"], after={"k": "b", "v": 2})]}


def test_writes_through_another_connection_are_reported(
    tmp_path: Path, cassette_path: Path
) -> None:
    conn = sqlite3.connect(tmp_path / "w.db")
    conn.execute("create table t (id integer primary key)")
    conn.commit()

    @tool(writes=True)
    def sneaky() -> None:
        other = sqlite3.connect(tmp_path / "w.db")
        with other:
            other.execute("insert into t values (1)")
        other.close()

    with record(cassette_path, world=conn):
        sneaky()
    warnings = [
        e.message for e in read_cassette(cassette_path).events if isinstance(e, WarningEvent)
    ]
    assert any("another connection wrote to the world" in w for w in warnings)


def test_read_only_tool_that_writes_is_flagged(cassette_path: Path) -> None:
    conn = sqlite3.connect(":memory:")
    conn.execute("create table t (id integer primary key)")

    @tool
    def lookup() -> None:
        conn.execute("insert into t values (1)")

    with record(cassette_path, world=conn):
        lookup()
    events = read_cassette(cassette_path).events
    assert any(
        isinstance(e, WarningEvent) and "declared read-only but changed the world" in e.message
        for e in events
    )


def test_capture_leaves_no_trace_in_the_world(tmp_path: Path) -> None:
    conn = sqlite3.connect(tmp_path / "w.db")
    conn.execute("create table t (id integer primary key)")
    before = conn.execute("select sql from sqlite_master").fetchall()
    capture = ChangeCapture(conn)
    conn.execute("insert into t values (1)")
    assert capture.take()[0] == {"t": [RowChange(key=[1], after={"id": 1})]}
    capture.close()
    assert conn.execute("select sql from sqlite_master").fetchall() == before
    assert conn.execute("select count(*) from temp.sqlite_master").fetchone() == (0,)


def capture_of(conn: sqlite3.Connection) -> ChangeCapture:
    return ChangeCapture(conn)


def test_changes_after_a_rollback_are_all_captured() -> None:
    conn = sqlite3.connect(":memory:", isolation_level=None)
    conn.execute("create table t (id integer primary key, x text)")
    capture = capture_of(conn)
    conn.execute("begin")
    conn.execute("insert into t values (1, 'a'), (2, 'b')")
    assert len(capture.take()[0]["t"]) == 2
    conn.execute("rollback")  # log ids 1 and 2 vanish with it; they must not be handed out again
    conn.execute("insert into t values (10, 'x'), (11, 'y'), (12, 'z')")
    assert [c.key for c in capture.take()[0]["t"]] == [[10], [11], [12]]


def test_replace_records_the_row_it_removed() -> None:
    conn = sqlite3.connect(":memory:", isolation_level=None)
    conn.execute("create table u (id integer primary key, email text unique, n int)")
    conn.execute("insert into u values (1, 'a', 0)")
    capture = capture_of(conn)
    conn.execute("insert or replace into u (id, email, n) values (1, 'a', 7)")
    assert capture.take()[0] == {"u": [RowChange(key=[1], before={"n": 0}, after={"n": 7})]}
    conn.execute("insert or replace into u (email, n) values ('a', 9)")  # removes row 1 by email
    assert capture.take()[0] == {
        "u": [
            RowChange(key=[1], before={"id": 1, "email": "a", "n": 7}),
            RowChange(key=[2], after={"id": 2, "email": "a", "n": 9}),
        ]
    }
    capture.close()
    assert conn.execute("pragma recursive_triggers").fetchone() == (0,)


def test_reals_keep_every_digit_and_infinity() -> None:
    conn = sqlite3.connect(":memory:", isolation_level=None)
    conn.execute("create table t (id integer primary key, x real)")
    conn.execute("insert into t values (1, 0.3)")
    capture = capture_of(conn)
    conn.execute("update t set x = ? where id = 1", (0.1 + 0.2,))
    conn.execute("insert into t values (2, ?), (3, ?)", (1234567.8912345678, float("inf")))
    assert capture.take()[0] == {
        "t": [
            RowChange(key=[1], before={"x": 0.3}, after={"x": 0.30000000000000004}),
            RowChange(key=[2], after={"id": 2, "x": 1234567.8912345678}),
            RowChange(key=[3], after={"id": 3, "x": float("inf")}),
        ]
    }


def test_wide_tables_schema_changes_and_user_connection_settings() -> None:
    conn = sqlite3.connect(":memory:")
    conn.row_factory = lambda cursor, row: dict(
        zip([c[0] for c in cursor.description], row, strict=True)
    )
    conn.execute("create table wide (" + ", ".join(f"c{i}" for i in range(130)) + ")")
    conn.execute("create table t (id integer primary key, x text)")
    capture = capture_of(conn)
    conn.execute("insert into wide (c0, c129) values (1, 2)")
    (change,) = capture.take()[0]["wide"]
    assert change.after is not None and (change.after["c0"], change.after["c129"]) == (1, 2)
    conn.execute("alter table t add column y text")
    assert capture.take()[0] == {}  # one tool call alters, the next writes the new column
    conn.execute("insert into t values (1, 'a', 'b')")
    assert capture.take()[0] == {"t": [RowChange(key=[1], after={"id": 1, "x": "a", "y": "b"})]}
    conn.execute("create table fresh (k text primary key)")
    conn.execute("insert into fresh values ('n')")
    assert capture.take()[0] == {"fresh": [RowChange(key=["n"], after={"k": "n"})]}
    conn.commit()
    assert not conn.in_transaction  # the capture opened no transaction of its own
    conn.execute("begin immediate")
    conn.execute("rollback")


def test_two_recordings_on_one_connection_keep_their_own_logs(tmp_path: Path) -> None:
    conn = sqlite3.connect(":memory:")
    conn.execute("create table t (id integer primary key)")

    @tool(writes=True)
    def add(n: int) -> None:
        conn.execute("insert into t values (?)", (n,))

    with record(tmp_path / "outer.cassette", world=conn):
        add(1)
        with record(tmp_path / "inner.cassette", world=conn):
            add(2)
        add(3)
    outer = read_cassette(tmp_path / "outer.cassette").footer
    inner = read_cassette(tmp_path / "inner.cassette").footer
    assert outer is not None and inner is not None
    assert [c.key for c in outer.state_diff["t"]] == [[1], [2], [3]]  # type: ignore[index]
    assert [c.key for c in inner.state_diff["t"]] == [[2]]  # type: ignore[index]


def _calls(cassette_path: Path) -> dict[int, list[list[object]]]:
    """Each call's recorded delta (keys of rows inserted into t), by its argument n."""
    cassette = read_cassette(cassette_path)
    return {
        e.args["n"]: sorted(c.key for c in (e.delta or {}).get("t", []))
        for e in cassette.events
        if isinstance(e, ToolEvent)
    }


def _world() -> sqlite3.Connection:
    conn = sqlite3.connect(":memory:", check_same_thread=False)
    conn.execute("create table t (id integer primary key, n integer)")
    return conn


def test_concurrent_async_tools_each_carry_their_own_rows(cassette_path: Path) -> None:
    import asyncio

    conn = _world()

    @tool(writes=True)
    async def add(n: int, delay: float) -> None:
        conn.execute("insert into t values (?, ?)", (n * 10, n))
        await asyncio.sleep(delay)  # the others would write here, were they not waiting
        conn.execute("insert into t values (?, ?)", (n * 10 + 1, n))

    async def agent() -> None:
        await asyncio.gather(add(1, 0.03), add(2, 0.0), add(3, 0.01))

    with record(cassette_path, world=conn):
        asyncio.run(agent())
    assert _calls(cassette_path) == {n: [[n * 10], [n * 10 + 1]] for n in (1, 2, 3)}
    cassette = read_cassette(cassette_path)
    assert not [e for e in cassette.events if isinstance(e, WarningEvent)]
    assert cassette.footer is not None and len(cassette.footer.state_diff["t"]) == 6  # type: ignore[index]


def test_tools_in_threads_each_carry_their_own_rows(cassette_path: Path) -> None:
    import time
    from concurrent.futures import ThreadPoolExecutor

    conn = _world()

    @tool(writes=True)
    def add(n: int) -> None:
        conn.execute("insert into t values (?, ?)", (n * 10, n))
        time.sleep(0.01)
        conn.execute("insert into t values (?, ?)", (n * 10 + 1, n))

    with record(cassette_path, world=conn), ThreadPoolExecutor(4) as pool:
        list(pool.map(add, range(1, 9)))
    assert _calls(cassette_path) == {n: [[n * 10], [n * 10 + 1]] for n in range(1, 9)}


def test_a_sync_tool_on_the_loop_runs_inside_a_suspended_async_one(cassette_path: Path) -> None:
    # openai-agents and langgraph may call a sync tool on the event loop's thread while
    # an async tool of the same turn is suspended: waiting for it would stop the loop.
    import asyncio

    conn = _world()

    @tool(writes=True)
    async def slow(n: int) -> None:
        conn.execute("insert into t values (?, ?)", (n * 10, n))
        await asyncio.sleep(0.02)
        conn.execute("insert into t values (?, ?)", (n * 10 + 1, n))

    @tool(writes=True)
    def quick(n: int) -> None:
        conn.execute("insert into t values (?, ?)", (n * 10, n))

    async def call_quick() -> None:
        await asyncio.sleep(0.005)
        quick(2)

    async def agent() -> None:
        await asyncio.wait_for(asyncio.gather(slow(1), call_quick()), timeout=5)

    with record(cassette_path, world=conn):
        asyncio.run(agent())
    assert _calls(cassette_path) == {1: [[10], [11]], 2: [[20]]}


def test_a_tool_run_by_a_tool_in_a_thread_pool_does_not_wait_forever(
    cassette_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # A pool does not carry the context that marks the inner call as nested: it would wait
    # for the outer call's turn, which waits for it. It gives up after TURN_WAIT, warned.
    from concurrent.futures import ThreadPoolExecutor

    from recorder import _turns

    monkeypatch.setattr(_turns, "TURN_WAIT", 0.2)
    conn = _world()

    @tool(writes=True)
    def add(n: int) -> None:
        conn.execute("insert into t values (?, ?)", (n, n))

    @tool(writes=True)
    def add_many(n: int) -> None:
        with ThreadPoolExecutor(2) as pool:
            list(pool.map(add, [n * 10 + 1, n * 10 + 2]))

    with record(cassette_path, world=conn):
        add_many(1)
    calls = _calls(cassette_path)
    assert calls[1] == [[11], [12]]  # the outer call carries what it had done, as if nested
    assert calls[11] == calls[12] == []
    cassette = read_cassette(cassette_path)
    waited = [e.message for e in cassette.events if isinstance(e, WarningEvent)]
    assert len(waited) == 2 and all("ran without it" in m for m in waited)


def test_overlapping_rows_inside_a_suspended_call_are_warned(cassette_path: Path) -> None:
    import asyncio

    conn = _world()
    conn.execute("insert into t values (1, 0)")

    @tool(writes=True)
    async def slow(n: int) -> None:
        conn.execute("update t set n = 1 where id = 1")
        await asyncio.sleep(0.02)
        conn.execute("update t set n = n + 10 where id = 1")

    @tool(writes=True)
    def quick(n: int) -> None:
        conn.execute("update t set n = n * 100 where id = 1")

    async def call_quick() -> None:
        await asyncio.sleep(0.005)
        quick(2)

    async def agent() -> None:
        await asyncio.gather(slow(1), call_quick())

    with record(cassette_path, world=conn):
        asyncio.run(agent())
    cassette = read_cassette(cassette_path)
    assert any(
        isinstance(e, WarningEvent) and "quick ran inside this call's turn" in e.message
        for e in cassette.events
    )


def test_a_call_still_holding_its_turn_at_close_is_named(cassette_path: Path) -> None:
    import threading

    conn = _world()
    release = threading.Event()

    @tool(writes=True)
    def stuck(n: int) -> None:
        conn.execute("insert into t values (?, ?)", (n, n))
        release.wait(5)

    with record(cassette_path, world=conn):
        worker = threading.Thread(target=stuck, args=(1,))
        worker.start()
        for _ in range(100):  # until it holds its turn
            if conn.execute("select count(*) from t").fetchone()[0]:
                break
            threading.Event().wait(0.01)
    release.set()
    worker.join()
    cassette = read_cassette(cassette_path)
    assert any(
        isinstance(e, WarningEvent) and "tool stuck was still running" in e.message
        for e in cassette.events
    )


def test_changes_between_calls_are_outside_any_call(cassette_path: Path) -> None:
    import asyncio

    conn = _world()

    @tool(writes=True)
    async def add(n: int) -> None:
        conn.execute("insert into t values (?, ?)", (n, n))

    async def agent() -> None:
        await add(1)
        conn.execute("insert into t values (99, 0)")  # the agent's own write
        await add(2)

    with record(cassette_path, world=conn):
        asyncio.run(agent())
    assert _calls(cassette_path) == {1: [[1]], 2: [[2]]}
    cassette = read_cassette(cassette_path)
    (outside,) = [e for e in cassette.events if isinstance(e, WarningEvent)]
    assert "outside any tool call" in outside.message
    assert outside.delta is not None and [c.key for c in outside.delta["t"]] == [[99]]


def test_a_failed_start_leaves_the_connection_untouched(cassette_path: Path) -> None:
    conn = sqlite3.connect(":memory:")
    conn.execute("create table t (id integer primary key)")
    cassette_path.write_bytes(b"someone else's file")
    with pytest.raises(Exception, match="already exists"):
        record(cassette_path, world=conn)
    assert conn.execute("select count(*) from temp.sqlite_master").fetchone() == (0,)


def test_a_kept_capture_serves_recordings_until_released(tmp_path: Path) -> None:
    conn = sqlite3.connect(":memory:", isolation_level=None)
    conn.execute("create table t (id integer primary key)")
    conn.execute("begin")
    with pytest.raises(ValueError, match="outside any transaction"):
        keep_capture(conn)
    conn.execute("rollback")
    release = keep_capture(conn)
    assert keep_capture(conn) == release  # kept once per connection

    @tool(writes=True)
    def add(n: int) -> None:
        conn.execute("insert into t values (?)", (n,))

    def keys(name: str) -> list[list[int]]:
        footer = read_cassette(tmp_path / name).footer
        assert footer is not None and footer.state_diff is not None
        return [c.key for c in footer.state_diff.get("t", [])]

    for n in (1, 2):  # each trial rolled back: each sees its own row only
        conn.execute("begin")
        with record(tmp_path / f"{n}.cassette", world=conn):
            add(n)
        conn.execute("rollback")
        assert keys(f"{n}.cassette") == [[n]]
    conn.execute("begin")
    with record(tmp_path / "outer.cassette", world=conn):  # the kept capture
        add(3)
        with record(tmp_path / "inner.cassette", world=conn):  # in use: arms its own
            add(4)
    conn.execute("rollback")
    assert keys("outer.cassette") == [[3], [4]] and keys("inner.cassette") == [[4]]
    release()
    left = conn.execute("select name from temp.sqlite_master").fetchall()
    assert left == [] and conn.execute("pragma recursive_triggers").fetchone() == (0,)
