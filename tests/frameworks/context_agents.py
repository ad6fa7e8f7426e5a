"""Agents whose tools take their framework's run context, as those frameworks document.

pydantic-ai's ``@agent.tool`` with ``ctx: RunContext[Deps]`` (the deps hold the
world's sqlite connection), and an openai-agents ``function_tool`` taking
``RunContextWrapper[Deps]``: each tool is also ``recorder.tool``, so a recording
captures its calls. The world reaches the tools through the context only. (No
``from __future__ import annotations``: the frameworks are imported where used,
and their names must resolve when the tools are made.)
"""

import sqlite3
import threading
from dataclasses import dataclass, field
from typing import Any

from examples.frameworks.tools import reserve_in
from recorder import tool

MODEL = "stub-inventory-1"
INSTRUCTIONS = "You keep a small shop's inventory. Check the stock before you reserve anything."


@dataclass
class Deps:
    """What the tools need: the shop's database (no JSON schema has it)."""

    conn: sqlite3.Connection
    lock: threading.Lock = field(default_factory=threading.Lock)  # parallel calls take turns


def _stock(deps: Deps, sku: str) -> dict[str, Any]:
    with deps.lock:
        row = deps.conn.execute("SELECT stock FROM items WHERE sku = ?", (sku,)).fetchone()
    return {"error": f"no item {sku!r}"} if row is None else {"sku": sku, "stock": row[0]}


def _reserve(deps: Deps, sku: str, qty: int) -> dict[str, Any]:
    with deps.lock:
        return reserve_in(deps.conn, sku, qty)


def pydantic_ai_agent(base_url: str, instructions: str = INSTRUCTIONS) -> Any:
    """A pydantic-ai agent whose tools take ``RunContext[Deps]``; run with ``deps=Deps(conn)``."""
    from pydantic_ai import Agent, RunContext
    from pydantic_ai.models.openai import OpenAIChatModel
    from pydantic_ai.providers.openai import OpenAIProvider

    llm = OpenAIChatModel(MODEL, provider=OpenAIProvider(base_url=base_url, api_key="sk-team"))
    agent = Agent(llm, deps_type=Deps, instructions=instructions)

    @agent.tool
    @tool
    async def check_stock(ctx: RunContext[Deps], sku: str) -> dict[str, Any]:
        """Look up how many of an item are in stock.

        Args:
            sku: The item's code, e.g. "mug".
        """
        return _stock(ctx.deps, sku)

    # A write: its parallel calls run one after the other, in the model's order (run at
    # once in threads, they would number their reservations in whichever order the threads
    # ran, and a replay would answer the model with other numbers than it was recorded with).
    @agent.tool(sequential=True)
    @tool(writes=True)
    def reserve(ctx: RunContext[Deps], sku: str, qty: int) -> dict[str, Any]:
        """Reserve some of an item for the customer.

        Args:
            sku: The item's code.
            qty: How many to reserve.
        """
        return _reserve(ctx.deps, sku, qty)

    return agent


def openai_agents_agent(client: Any, instructions: str = INSTRUCTIONS) -> Any:
    """An openai-agents agent on ``client`` (an ``AsyncOpenAI``) whose tools take
    ``RunContextWrapper[Deps]``; run with ``context=Deps(conn)``."""
    from agents import Agent, OpenAIChatCompletionsModel, RunContextWrapper, function_tool

    @function_tool
    @tool
    async def check_stock(wrapper: RunContextWrapper[Deps], sku: str) -> dict[str, Any]:
        """Look up how many of an item are in stock.

        Args:
            sku: The item's code, e.g. "mug".
        """
        return _stock(wrapper.context, sku)

    @function_tool
    @tool(writes=True)
    def reserve(wrapper: RunContextWrapper[Deps], sku: str, qty: int) -> dict[str, Any]:
        """Reserve some of an item for the customer.

        Args:
            sku: The item's code.
            qty: How many to reserve.
        """
        return _reserve(wrapper.context, sku, qty)

    model = OpenAIChatCompletionsModel(model=MODEL, openai_client=client)
    return Agent[Deps](
        name="shop", instructions=instructions, model=model, tools=[check_stock, reserve]
    )


def langchain_check_stock() -> Any:
    """A function whose ``call_id`` and ``config`` LangChain injects (made here, where
    those annotations resolve)."""
    from typing import Annotated

    from langchain_core.runnables import RunnableConfig
    from langchain_core.tools import InjectedToolCallId

    def check_stock(
        sku: str, call_id: Annotated[str, InjectedToolCallId], config: RunnableConfig
    ) -> str:
        """Look up how many of an item are in stock."""
        return f"{sku}: 3 in stock (call {call_id}, run {sorted(config)[0]})"

    return check_stock
