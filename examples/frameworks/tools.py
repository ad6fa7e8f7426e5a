"""The inventory tools: an async read and a sync write, as a team would write them."""

from __future__ import annotations

import asyncio
import sqlite3
from typing import Any

from recorder import Tool, tool


def make_tools(conn: sqlite3.Connection) -> list[Tool[..., Any]]:
    """The tools over one world (``replay run --tools examples.frameworks:make_tools``)."""

    async def check_stock(sku: str) -> dict[str, Any]:
        """Look up how many of an item are in stock.

        Args:
            sku: The item's code, e.g. "mug".
        """
        await asyncio.sleep(0.001)  # a service call, as an async tool would make
        row = conn.execute("SELECT name, stock FROM items WHERE sku = ?", (sku,)).fetchone()
        if row is None:
            return {"error": f"no item {sku!r}"}
        return {"sku": sku, "name": row[0], "stock": row[1]}

    def reserve(sku: str, qty: int) -> dict[str, Any]:
        """Reserve some of an item for the customer.

        Args:
            sku: The item's code.
            qty: How many to reserve.
        """
        return reserve_in(conn, sku, qty)

    return [tool(check_stock), tool(reserve, writes=True)]


def reserve_in(conn: sqlite3.Connection, sku: str, qty: int) -> dict[str, Any]:
    """Take ``qty`` of ``sku`` off the stock into a new reservation, if there are that many."""
    row = conn.execute("SELECT stock FROM items WHERE sku = ?", (sku,)).fetchone()
    if row is None or row[0] < qty:
        return {"error": f"cannot reserve {qty} of {sku!r}"}
    conn.execute("UPDATE items SET stock = stock - ? WHERE sku = ?", (qty, sku))
    cursor = conn.execute("INSERT INTO reservations (sku, qty) VALUES (?, ?)", (sku, qty))
    conn.commit()
    return {"reservation": cursor.lastrowid, "sku": sku, "qty": qty}
