"""The shop's tools: each a recorded ``@tool`` bound to the world's connection."""

from __future__ import annotations

import sqlite3
from typing import Any

from recorder import Tool, tool


class ShopError(Exception):
    """A tool refused the call (unknown order, bad amount...)."""


def make_tools(conn: sqlite3.Connection) -> list[Tool[..., Any]]:
    """Return the shop's tools, reading and writing through ``conn``."""

    @tool
    def lookup_order(order_id: int) -> dict[str, Any]:
        """Look up an order and its customer.

        Args:
            order_id: The order number.
        """
        row = conn.execute(
            "SELECT o.id, o.total, o.status, c.id, c.name, c.email FROM orders o "
            "JOIN customers c ON c.id = o.customer_id WHERE o.id = ?",
            (order_id,),
        ).fetchone()
        if row is None:
            raise ShopError(f"no order {order_id}")
        keys = ("order_id", "total", "status", "customer_id", "customer_name", "customer_email")
        return dict(zip(keys, row, strict=True))

    @tool(writes=True)
    def issue_refund(
        order_id: int, amount: float, reason: str, idempotency_key: str | None = None
    ) -> dict[str, Any]:
        """Refund part or all of an order.

        Args:
            order_id: The order to refund.
            amount: Amount to refund, at most the order total.
            reason: Why the refund is issued.
            idempotency_key: The same key again returns the first refund instead of paying
                twice (send one: a retried call must not refund twice).
        """
        if idempotency_key is not None:
            done = conn.execute(
                "SELECT id, order_id, amount FROM refunds WHERE idempotency_key = ?",
                (idempotency_key,),
            ).fetchone()
            if done is not None:
                return {"refund_id": done[0], "order_id": done[1], "amount": done[2]}
        total = conn.execute("SELECT total FROM orders WHERE id = ?", (order_id,)).fetchone()
        if total is None:
            raise ShopError(f"no order {order_id}")
        if not 0 < amount <= total[0]:
            raise ShopError(f"refund amount {amount} must be in (0, {total[0]}]")
        with conn:
            cur = conn.execute(
                "INSERT INTO refunds (order_id, amount, reason, idempotency_key) "
                "VALUES (?, ?, ?, ?)",
                (order_id, amount, reason, idempotency_key),
            )
        return {"refund_id": cur.lastrowid, "order_id": order_id, "amount": amount}

    @tool(writes=True)
    def update_order_status(order_id: int, status: str) -> dict[str, Any]:
        """Set an order's status (paid, shipped, refunded or cancelled).

        Args:
            order_id: The order to update.
            status: The new status.
        """
        with conn:
            cur = conn.execute("UPDATE orders SET status = ? WHERE id = ?", (status, order_id))
        if cur.rowcount == 0:
            raise ShopError(f"no order {order_id}")
        return {"order_id": order_id, "status": status}

    @tool(writes=True)
    def write_ledger_entry(order_id: int, amount: float, memo: str) -> dict[str, Any]:
        """Write an entry in the ledger (negative amounts for money paid out).

        Args:
            order_id: The order the entry belongs to.
            amount: Signed amount.
            memo: What the entry is for.
        """
        with conn:
            cur = conn.execute(
                "INSERT INTO ledger (order_id, amount, memo) VALUES (?, ?, ?)",
                (order_id, amount, memo),
            )
        return {"entry_id": cur.lastrowid}

    @tool(writes=True)
    def send_email(customer_id: int, template: str, subject: str, body: str) -> dict[str, Any]:
        """Send an email to a customer.

        Args:
            customer_id: The customer to write to.
            template: Template name, e.g. "refund".
            subject: Subject line.
            body: Message text.
        """
        with conn:
            cur = conn.execute(
                "INSERT INTO emails (customer_id, template, subject, body) VALUES (?, ?, ?, ?)",
                (customer_id, template, subject, body),
            )
        return {"email_id": cur.lastrowid, "status": "queued"}

    return [lookup_order, issue_refund, update_order_status, write_ledger_entry, send_email]
