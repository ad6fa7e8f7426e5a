"""The same inventory agents, taking their tools from an MCP server instead of functions.

Each framework's own MCP client pointed at ``env.mcp.url``: the trial's tools
served over streamable HTTP (the official ``mcp`` SDK), every call recorded
as a tool event with its world delta, answered from the cassette offline.

``replay run cases/reserve.yaml --agent examples.frameworks.mcp_agents:openai_agents
--tools examples.frameworks:make_tools ...``
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from replay import Environment

INSTRUCTIONS = "You keep a small shop's inventory. Check the stock before you reserve anything."
MODEL = "stub-inventory-1"


def _url(env: Environment) -> str:
    if env.mcp is None:
        raise RuntimeError("this agent takes its tools from env.mcp (agent-replay's MCP server)")
    return env.mcp.url


async def openai_agents(instruction: str, env: Environment) -> str:
    """openai-agents with ``MCPServerStreamableHttp`` and its chat-completions model."""
    from agents import Agent, OpenAIChatCompletionsModel, Runner
    from agents.mcp import MCPServerStreamableHttp
    from openai import AsyncOpenAI

    async with (
        AsyncOpenAI(base_url=env.llm_base_url, api_key=env.api_key) as client,
        MCPServerStreamableHttp(params={"url": _url(env)}, cache_tools_list=True) as server,
    ):
        agent = Agent(
            name="inventory",
            instructions=env.settings.get("instructions", INSTRUCTIONS),
            mcp_servers=[server],
            model=OpenAIChatCompletionsModel(env.model or MODEL, client),
        )
        return str((await Runner.run(agent, instruction)).final_output)


async def openai_agents_stdio(instruction: str, env: Environment) -> str:
    """openai-agents with ``MCPServerStdio``: the server is a command it starts."""
    from agents import Agent, OpenAIChatCompletionsModel, Runner
    from agents.mcp import MCPServerStdio
    from openai import AsyncOpenAI

    if env.mcp is None:
        raise RuntimeError("this agent takes its tools from env.mcp (agent-replay's MCP server)")
    command, *args = env.mcp.command
    async with (
        AsyncOpenAI(base_url=env.llm_base_url, api_key=env.api_key) as client,
        MCPServerStdio(params={"command": command, "args": args}, cache_tools_list=True) as server,
    ):
        agent = Agent(
            name="inventory",
            instructions=env.settings.get("instructions", INSTRUCTIONS),
            mcp_servers=[server],
            model=OpenAIChatCompletionsModel(env.model or MODEL, client),
        )
        return str((await Runner.run(agent, instruction)).final_output)


async def pydantic_ai(instruction: str, env: Environment) -> str:
    """pydantic-ai with its ``MCPToolset`` (built on FastMCP's client)."""
    from pydantic_ai import Agent
    from pydantic_ai.mcp import MCPToolset
    from pydantic_ai.models.openai import OpenAIChatModel
    from pydantic_ai.providers.openai import OpenAIProvider

    provider = OpenAIProvider(base_url=env.llm_base_url, api_key=env.api_key)
    agent = Agent(
        OpenAIChatModel(env.model or MODEL, provider=provider),
        instructions=env.settings.get("instructions", INSTRUCTIONS),
        toolsets=[MCPToolset(_url(env))],
    )
    async with agent:
        return (await agent.run(instruction)).output


async def langgraph(instruction: str, env: Environment) -> str:
    """A LangGraph agent whose tools come from ``langchain-mcp-adapters``."""
    import httpx
    from langchain_core.messages import SystemMessage
    from langchain_mcp_adapters.client import MultiServerMCPClient
    from langchain_openai import ChatOpenAI
    from langgraph.graph import START, MessagesState, StateGraph
    from langgraph.prebuilt import ToolNode, tools_condition

    client = MultiServerMCPClient({"world": {"url": _url(env), "transport": "streamable_http"}})
    tools = await client.get_tools()
    instructions = env.settings.get("instructions", INSTRUCTIONS)
    async with httpx.AsyncClient() as http_client:
        llm = ChatOpenAI(
            model=env.model or MODEL,
            base_url=env.llm_base_url,
            api_key=env.api_key,  # type: ignore[arg-type]
            http_async_client=http_client,
        ).bind_tools(tools)

        async def think(state: MessagesState) -> dict[str, Any]:
            return {
                "messages": [await llm.ainvoke([SystemMessage(instructions), *state["messages"]])]
            }

        graph = StateGraph(MessagesState)
        graph.add_node("agent", think)
        graph.add_node("tools", ToolNode(tools))
        graph.add_edge(START, "agent")
        graph.add_conditional_edges("agent", tools_condition)
        graph.add_edge("tools", "agent")
        state = await graph.compile().ainvoke({"messages": [("user", instruction)]})
    return str(state["messages"][-1].content)
