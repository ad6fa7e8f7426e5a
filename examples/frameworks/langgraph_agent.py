"""A LangGraph agent (model node, tool node, loop) on langchain-openai's ChatOpenAI."""

from __future__ import annotations

import inspect
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any

import httpx
from langchain_core.messages import SystemMessage
from langchain_core.tools import StructuredTool
from langchain_openai import ChatOpenAI
from langgraph.graph import START, MessagesState, StateGraph
from langgraph.prebuilt import ToolNode, tools_condition

if TYPE_CHECKING:
    from replay import Environment

INSTRUCTIONS = "You keep a small shop's inventory. Check the stock before you reserve anything."
MODEL = "stub-inventory-1"


def as_langchain_tool(function: Callable[..., Any]) -> StructuredTool:
    """A function as a LangChain tool: sync or async, as it is."""
    if inspect.iscoroutinefunction(function):
        return StructuredTool.from_function(coroutine=function)
    return StructuredTool.from_function(func=function)


def build(
    functions: Sequence[Callable[..., Any]],
    *,
    base_url: str,
    api_key: str,
    http_client: httpx.AsyncClient,
    model: str = MODEL,
    instructions: str = INSTRUCTIONS,
    stream: bool = False,
) -> Any:
    """The graph as the team wrote it."""
    llm = ChatOpenAI(
        model=model,
        base_url=base_url,
        api_key=api_key,  # type: ignore[arg-type]
        streaming=stream,
        http_async_client=http_client,
    )
    tools = [as_langchain_tool(f) for f in functions]
    model = llm.bind_tools(tools)

    async def think(state: MessagesState) -> dict[str, Any]:
        return {
            "messages": [await model.ainvoke([SystemMessage(instructions), *state["messages"]])]
        }

    graph = StateGraph(MessagesState)
    graph.add_node("agent", think)
    graph.add_node("tools", ToolNode(tools))  # runs one turn's tool calls concurrently
    graph.add_edge(START, "agent")
    graph.add_conditional_edges("agent", tools_condition)
    graph.add_edge("tools", "agent")
    return graph.compile()


async def agent(instruction: str, env: Environment) -> str:
    """The entry point ``replay run --agent`` calls."""
    async with httpx.AsyncClient() as http_client:  # ours to close, not a process-wide one
        graph = build(
            env.functions,
            base_url=env.llm_base_url,
            api_key=env.api_key,
            http_client=http_client,
            model=env.model or MODEL,
            instructions=env.settings.get("instructions", INSTRUCTIONS),
            stream=bool(env.settings.get("stream")),
        )
        state = await graph.ainvoke({"messages": [("user", instruction)]})
    return str(state["messages"][-1].content)
