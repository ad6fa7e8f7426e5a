"""Agents that take their tools over MCP (``env.mcp``, ``env.mcp_servers``), for the tests."""

from __future__ import annotations

import contextlib
from collections.abc import AsyncIterator, Sequence
from pathlib import Path
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


async def notes_over_sqlite(instruction: str, env: Environment) -> str:
    """Writes a note through mcp-server-sqlite (``env.mcp_servers["sqlite"]``), reads it back."""
    from mcp import ClientSession
    from mcp.client.streamable_http import streamable_http_client

    text = env.settings.get("text", "hello")
    async with (
        streamable_http_client(env.mcp_servers["sqlite"].url) as (read, write, _),
        ClientSession(read, write) as client,
    ):
        await client.initialize()
        listed = [t.name for t in (await client.list_tools()).tools]
        if "write_query" not in listed:
            return f"no write_query in {listed}"
        steps = [
            ("list_tables", {}),
            ("write_query", {"query": f"INSERT INTO notes (text) VALUES ('{text}')"}),
            ("read_query", {"query": "SELECT text FROM notes"}),
        ]
        answers = []
        for name, arguments in steps:
            result = await client.call_tool(name, arguments)
            answers.append(result.content[0].text)  # type: ignore[union-attr]
            if result.isError:
                return f"{name} failed: {answers[-1]}"
    return f"noted: {answers[-1]}"


@contextlib.asynccontextmanager
async def _over_stdio(command: Sequence[str]) -> AsyncIterator[Any]:
    """An initialized MCP client session with the server ``command`` starts (stdio)."""
    from mcp import ClientSession, StdioServerParameters
    from mcp.client.stdio import stdio_client

    program, *args = command
    async with (
        stdio_client(StdioServerParameters(command=program, args=args)) as (read, write),
        ClientSession(read, write) as client,
    ):
        await client.initialize()
        yield client


async def time_in(instruction: str, env: Environment) -> str:
    """Asks mcp-server-time (``env.mcp_servers["time"]``) for the time, over stdio."""
    zone = env.settings.get("timezone", "UTC")
    async with _over_stdio(env.mcp_servers["time"].command) as client:
        result = await client.call_tool("get_current_time", {"timezone": zone})
    return str(result.content[0].text)


async def task_done_over_stdio(instruction: str, env: Environment) -> str:
    """Marks a task done through mcp-server-sqlite, started by ``env.mcp_servers["sqlite"]``."""
    title = env.settings.get("title", "ship")
    async with _over_stdio(env.mcp_servers["sqlite"].command) as client:
        await client.list_tools()
        await client.call_tool(
            "write_query", {"query": f"UPDATE tasks SET done = 1 WHERE title = '{title}'"}
        )
        done = await client.call_tool("read_query", {"query": "SELECT title FROM tasks WHERE done"})
    return f"done: {done.content[0].text}"


def no_tools(conn: Any) -> list[Any]:
    """The case's own tools: none (the agent's come from its MCP servers)."""
    return []


def idle(instruction: str, env: Environment) -> str:
    """Uses none of its MCP servers."""
    return "nothing done"


async def scripted(instruction: str, env: Environment) -> str:
    """Runs the steps in its instruction (JSON) on ``env.mcp_servers["test"]``, one line each.

    A step is ``["call", tool, arguments]``, ``["list", label]``, ``["read", uri]`` or
    ``["prompt", name, arguments]``; ``env.settings["steps"]`` replaces them,
    ``env.settings["via"]`` is ``stdio`` (default) or ``http``. Progress is written as
    it comes; a failed step is written and the agent goes on, as a careful agent would.
    """
    import json

    from mcp import ClientSession
    from mcp.client.streamable_http import streamable_http_client

    steps = env.settings.get("steps") or json.loads(instruction)
    lines: list[str] = []

    async def progress(done: float, total: float | None, message: str | None) -> None:
        lines.append(f"progress {done:g}/{total:g} {message}")

    async def run(client: Any) -> None:
        for kind, name, *rest in steps:
            try:
                if kind == "call":
                    got = await client.call_tool(name, rest[0], progress_callback=progress)
                    lines.append(f"{name}: {got.content[0].text}{' (error)' * got.isError}")
                elif kind == "list":
                    listed = await client.list_tools()
                    lines.append(f"{name}: {len(listed.tools)} tools")
                elif kind == "read":
                    lines.append(f"{name}: {(await client.read_resource(name)).contents[0].text}")
                else:
                    got = await client.get_prompt(name, rest[0])
                    lines.append(f"{name}: {got.messages[0].content.text}")
            except Exception as exc:  # the server failed under it: say so and go on
                lines.append(f"{name} failed: {type(exc).__name__}: {exc}")

    server = env.mcp_servers["test"]
    if env.settings.get("via") == "http":
        async with (
            streamable_http_client(server.url) as (read, write, _),
            ClientSession(read, write) as client,
        ):
            await client.initialize()
            await run(client)
    else:
        async with _over_stdio(server.command) as client:
            await run(client)
    return "\n".join(lines)


NODE_AGENT = Path(__file__).with_name("node_mcp_agent.mjs")


def in_node(instruction: str, env: Environment) -> str:
    """An agent in another language (``node_mcp_agent.mjs``), given ``env.variables()`` alone.

    The calls are the instruction's (JSON); ``env.settings["variable"]`` names the
    address to use (default ``REPLAY_MCP_URL``, the trial's own tools).
    """
    import json
    import os
    import subprocess

    variable = env.settings.get("variable", "REPLAY_MCP_URL")
    done = subprocess.run(
        ["node", str(NODE_AGENT), variable, json.dumps(json.loads(instruction))],
        env={"PATH": os.environ.get("PATH", ""), **env.variables()},
        capture_output=True,
        text=True,
        timeout=60,
    )
    if done.returncode:
        raise RuntimeError(f"the node agent failed: {done.stderr.strip()[-300:]}")
    return done.stdout.strip()
