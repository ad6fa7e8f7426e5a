"""Agents that take their tools from the trial's MCP server (``env.mcp.url``), for the tests."""

from __future__ import annotations

from typing import Any

from replay import Environment

REFUND = [
    ("lookup_order", {"order_id": 4812}),
    (
        "issue_refund",
        {
            "order_id": 4812,
            "amount": 35.0,
            "reason": "customer request",
            "idempotency_key": "refund-4812",
        },
    ),
    ("update_order_status", {"order_id": 4812, "status": "refunded"}),
    ("write_ledger_entry", {"order_id": 4812, "amount": -35.0, "memo": "refund order 4812"}),
    (
        "send_email",
        {
            "customer_id": 17,
            "template": "refund",
            "subject": "Your refund for order 4812",
            "body": "Hi Mia, we refunded $35.00 for order 4812.",
        },
    ),
]


async def refund_over_mcp(instruction: str, env: Environment) -> str:
    """The refund, each call through the official MCP client (``env.settings["amount"]``)."""
    from mcp import ClientSession
    from mcp.client.streamable_http import streamable_http_client

    assert env.mcp is not None
    amount = env.settings.get("amount", 35.0)
    async with (
        streamable_http_client(env.mcp.url) as (read, write, _),
        ClientSession(read, write) as client,
    ):
        await client.initialize()
        listed = [t.name for t in (await client.list_tools()).tools]
        for name, arguments in REFUND:
            if name not in listed:
                return f"the server has no tool {name}"
            args: dict[str, Any] = dict(arguments)
            if name == "issue_refund":
                args["amount"] = amount
            result = await client.call_tool(name, args)
            if result.isError:
                return f"{name} failed: {result.content[0].text}"  # type: ignore[union-attr]
    return f"I refunded ${amount:.2f} for order 4812 and emailed the customer."
