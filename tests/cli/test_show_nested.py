"""``replay show`` prints a changed JSON document field as the paths in it that changed."""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path

from recorder import record, tool
from tests.helpers import replay


def test_a_nested_change_is_shown_by_its_path_not_as_two_documents(tmp_path: Path) -> None:
    conn = sqlite3.connect(":memory:")
    conn.execute("CREATE TABLE customers (id INTEGER PRIMARY KEY, doc TEXT)")
    doc = {"name": "Mia", "address": {"city": "Paris", "zip": "75001"}, "tags": ["a", "b"]}
    conn.execute("INSERT INTO customers VALUES (1, ?)", (json.dumps(doc),))
    conn.commit()

    @tool(writes=True)
    def move(city: str) -> str:
        """Move the customer."""
        moved = {**doc, "address": {**doc["address"], "city": city}, "tags": ["a", "c"]}
        conn.execute("UPDATE customers SET doc = ? WHERE id = 1", (json.dumps(moved),))
        conn.commit()
        return city

    with record(tmp_path / "m.cassette", world=conn) as rec:
        move("Lyon")
        rec.answer("moved")
    code, out, _ = replay("show", str(tmp_path / "m.cassette"))
    assert code == 0
    lines = [" ".join(line.split()) for line in out.splitlines()]
    assert "~ customers[1] doc.address.city: 'Paris' -> 'Lyon', doc.tags[1]: 'b' -> 'c'" in lines
    assert "75001" not in out  # the unchanged rest of the document is not printed
