"""``world_hash``: a hash of content (not page layout), versioned; v1 pins still check."""

from __future__ import annotations

import hashlib
import json
import sqlite3
from pathlib import Path
from typing import Any

import msgpack
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from recorder import world_hash
from tests.helpers import SHOP_FIXTURE

SHOP_V1 = "8acfd82b21d63767"
"""The shop fixture's v1 hash, as the committed cassettes pin it."""

EVERY_TYPE = (
    "create table t (id integer primary key, v);"
    "insert into t values (1, null), (2, ''), (3, 0), (4, 0.0), (5, x''), (6, 'a'), (7, x'61'),"
    " (8, 1), (9, 1.0), (10, -0.0), (11, 9223372036854775807), (12, 1e308), (13, 'é');"
)


def world(script: str, path: Path | None = None, **options: Any) -> sqlite3.Connection:
    conn = sqlite3.connect(path or ":memory:", **options)
    conn.executescript(script)
    return conn


def test_the_current_version_is_marked_and_v1_pins_check_with_the_v1_function() -> None:
    shop = world(SHOP_FIXTURE.read_text())
    current = world_hash(shop)
    assert current.startswith("v2:") and len(current) == 19
    int(current[3:], 16)
    assert world_hash(shop, like=current) == current
    assert world_hash(shop, like=SHOP_V1) == SHOP_V1  # (the committed cassettes' pin)
    assert world_hash(shop, like="0123456789abcdef") == SHOP_V1  # any v1 pin: the v1 hash
    for unknown in ("v3:0123456789abcdef", "0123456789ABCDEF", "", "abc"):
        with pytest.raises(ValueError, match="no fixture hash this version knows"):
            world_hash(shop, like=unknown)


def test_v2_is_the_documented_encoding() -> None:
    # Written out from the docstring, to pin the format: schema rows as JSON, each
    # table's rows as msgpack arrays in key order, then a msgpack nil.
    conn = world(EVERY_TYPE + "create index t_v on t (v); create table u (k text primary key);")
    conn.executemany("insert into u values (?)", [(f"k{i:04}",) for i in range(1500)])
    digest = hashlib.sha256()
    schema = conn.execute("select type, name, sql from sqlite_master order by type, name")
    schema = schema.fetchall()
    assert [r[:2] for r in schema] == [
        ("index", "sqlite_autoindex_u_1"),  # (left out: an internal name)
        ("index", "t_v"),
        ("table", "t"),
        ("table", "u"),
    ]
    for kind, name, sql in schema[1:]:
        digest.update(json.dumps([kind, name, sql]).encode())
        if kind == "table":
            rows = conn.execute(f"select * from {name} order by 1").fetchall()
            for row in rows:
                digest.update(msgpack.packb(list(row), use_bin_type=True))
            digest.update(b"\xc0")
    assert world_hash(conn) == "v2:" + digest.hexdigest()[:16]
    assert world_hash(world(EVERY_TYPE)) == "v2:6154d4d468a5bde4"  # (a golden value)


def test_every_sqlite_type_is_its_own_value() -> None:
    base = world(EVERY_TYPE)
    values = [r[0] for r in base.execute("select v from t order by id")]
    seen = {}
    for i, value in enumerate(values):
        one = world("create table t (id integer primary key, v);")
        one.execute("insert into t values (1, ?)", (value,))
        seen[world_hash(one)] = i
    assert len(seen) == len(values)  # NULL, '', 0, 0.0, x'', 'a', x'61', 1, 1.0, -0.0 ... apart


def test_the_same_content_hashes_the_same_whatever_the_layout(tmp_path: Path) -> None:
    rows = [(i, f"name {i}", i * 0.5, bytes([i % 256]) * (i % 700)) for i in range(1, 2000)]
    schema = "create table t (id integer primary key, name text, score real, data blob);"
    memory = world(schema)
    memory.executemany("insert into t values (?, ?, ?, ?)", rows)
    on_disk = world("pragma page_size = 1024;" + schema, tmp_path / "w.db")
    with on_disk:
        on_disk.executemany("insert into t values (?, ?, ?, ?)", reversed(rows))
        on_disk.execute("insert into t values (5000, 'gone', 1, x'00')")
        on_disk.execute("delete from t where id = 5000")  # (a free page or two)
    assert world_hash(memory) == world_hash(on_disk)
    assert world_hash(memory, like=SHOP_V1) == world_hash(on_disk, like=SHOP_V1)
    with on_disk:
        on_disk.execute("update t set score = 1 where id = 2")  # a REAL column keeps 1.0
    assert world_hash(memory) == world_hash(on_disk)
    with on_disk:
        on_disk.execute("update t set data = 1 where id = 2")  # (no affinity: an integer)
    memory.execute("update t set data = 1.0 where id = 2")
    assert world_hash(memory) != world_hash(on_disk)
    memory.execute("update t set data = 1 where id = 2")
    assert world_hash(memory) == world_hash(on_disk)


def test_a_connection_s_converters_do_not_change_the_hash(tmp_path: Path) -> None:
    script = (
        'create table e (id integer primary key, at timestamp, "day [date]" date);'
        "insert into e values (1, '2026-01-02 03:04:05', '2026-01-02');"
    )
    path = tmp_path / "e.db"
    world(script, path).commit()
    plain = sqlite3.connect(path)
    converting = sqlite3.connect(
        path, detect_types=sqlite3.PARSE_DECLTYPES | sqlite3.PARSE_COLNAMES
    )
    assert world_hash(converting) == world_hash(plain)


def test_tables_views_and_keys_of_every_kind() -> None:
    script = (
        "create table a (x text, y integer, primary key (y, x)) without rowid;"
        "create table b (v);"  # no key: rowid order
        "create view vb as select v from b;"
        "create table c (n integer, twice integer generated always as (n * 2));"
        "insert into a values ('p', 2), ('q', 1); insert into b values (3), (1);"
        "insert into c (n) values (4);"
    )
    first, second = world(script), world(script)
    assert world_hash(first) == world_hash(second)
    second.execute("update a set x = 'r' where y = 1")
    assert world_hash(first) != world_hash(second)


_values = st.one_of(
    st.none(),
    st.integers(-(2**63), 2**63 - 1),
    st.floats(allow_nan=False),
    st.text(max_size=20),
    st.binary(max_size=20),
)


@settings(max_examples=40, deadline=None)
@given(
    rows=st.dictionaries(st.integers(0, 10_000), st.tuples(_values, _values), max_size=40),
    data=st.data(),
)
def test_order_of_insertion_never_matters_and_any_change_shows(
    rows: dict[int, tuple[Any, Any]], data: st.DataObject
) -> None:
    schema = "create table t (id integer primary key, a, b);"
    items = [(k, *v) for k, v in rows.items()]
    first, second = world(schema), world(schema)
    first.executemany("insert into t values (?, ?, ?)", items)
    second.executemany("insert into t values (?, ?, ?)", data.draw(st.permutations(items)))
    assert world_hash(first) == world_hash(second)
    if items:
        key, a, _ = data.draw(st.sampled_from(items))
        other = data.draw(_values.filter(lambda v: type(v) is not type(a) or v != a))
        second.execute("update t set a = ? where id = ?", (other, key))
        assert world_hash(first) != world_hash(second)
