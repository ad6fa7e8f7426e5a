"""Framework agents whose tools come from third-party MCP servers, behind the recording proxy.

The same small agent on openai-agents (``MCPServerStreamableHttp`` and
``MCPServerStdio``), pydantic-ai (``MCPToolset``, over stdio) and LangGraph with
``langchain-mcp-adapters`` (over HTTP): it uses every server the trial names
(``env.mcp_servers``), each reached through agent-replay's proxy, so every
``tools/call`` is a recorded tool event (with the rows the server wrote in the
trial's world as its delta) and is answered from the cassette offline::

    from replay import McpServer, load_case, sandbox
    servers = {"sqlite": McpServer(command=["mcp-server-sqlite", "--db-path", "{world}"])}
    sandbox(load_case("examples/frameworks/mcp_cases/notes.yaml"), openai_agents, no_tools,
            out, llm_base_url=URL, mcp_servers=servers)

The model is the stub LLM playing ``notes_policy`` (or ``time_policy`` against
``mcp-server-time``): scripted tool calls, then an answer quoting the last
tool result. ``tests/frameworks/test_mcp_proxy_frameworks.py`` records each,
shows it, replays it offline (the real server never started) and has a
changed argument refused.
"""

from __future__ import annotations

import contextlib
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from replay.stub_llm import ChatRequest, Reply, ToolCall

if TYPE_CHECKING:
    from replay import Environment

INSTRUCTIONS = "You keep notes in a SQLite database. Read them back after you write one."
MODEL = "stub-notes-1"


def no_tools(conn: Any) -> list[Any]:
    """The trial's own tools: none, every tool comes from the third-party servers."""
    return []


@dataclass(frozen=True)
class Quoting:
    """The stub model's policy: one scripted tool call per turn, then the last result quoted."""

    calls: Sequence[ToolCall]
    prefix: str

    def __call__(self, request: ChatRequest) -> Reply:
        turn = sum(1 for m in request.messages if m["role"] == "assistant")
        if turn < len(self.calls):
            return Reply(tool_calls=(self.calls[turn],))
        last = next((m["content"] for m in reversed(request.messages) if m["role"] == "tool"), "")
        return Reply(content=f"{self.prefix}{last}")


def notes_policy(text: str = "hello") -> Quoting:
    """List the tables, insert the note ``text``, read the notes back, answer with them."""
    insert = f"INSERT INTO notes (text) VALUES ('{text}')"
    return Quoting(
        (
            ToolCall("list_tables", {}),
            ToolCall("write_query", {"query": insert}),
            ToolCall("read_query", {"query": "SELECT text FROM notes"}),
        ),
        prefix="The notes: ",
    )


def time_policy(timezone: str = "UTC") -> Quoting:
    """Ask mcp-server-time for the time in ``timezone``, answer with it."""
    return Quoting((ToolCall("get_current_time", {"timezone": timezone}),), prefix="It is ")


def _stdio(server: Any) -> dict[str, Any]:
    """A proxy's stdio command as clients take it: ``{"command": ..., "args": [...]}``."""
    command, *args = server.command
    return {"command": command, "args": args}


async def openai_agents(instruction: str, env: Environment) -> str:
    """openai-agents with ``MCPServerStreamableHttp`` on each proxy's URL."""
    from agents.mcp import MCPServerStreamableHttp

    servers = [
        MCPServerStreamableHttp(params={"url": s.url}, name=n, cache_tools_list=True)
        for n, s in env.mcp_servers.items()
    ]
    return await _run_openai_agents(instruction, env, servers)


async def openai_agents_stdio(instruction: str, env: Environment) -> str:
    """openai-agents with ``MCPServerStdio``: each proxy is a command it starts."""
    from agents.mcp import MCPServerStdio

    servers = [
        MCPServerStdio(params=_stdio(s), name=n, cache_tools_list=True)  # type: ignore[arg-type]
        for n, s in env.mcp_servers.items()
    ]
    return await _run_openai_agents(instruction, env, servers)


async def _run_openai_agents(instruction: str, env: Environment, servers: list[Any]) -> str:
    from agents import Agent, OpenAIChatCompletionsModel, Runner
    from openai import AsyncOpenAI

    async with contextlib.AsyncExitStack() as stack:
        client = await stack.enter_async_context(
            AsyncOpenAI(base_url=env.llm_base_url, api_key=env.api_key)
        )
        for server in servers:
            await stack.enter_async_context(server)
        agent = Agent(
            name="notes",
            instructions=INSTRUCTIONS,
            mcp_servers=servers,
            model=OpenAIChatCompletionsModel(env.model or MODEL, client),
        )
        return str((await Runner.run(agent, instruction)).final_output)


async def pydantic_ai(instruction: str, env: Environment) -> str:
    """pydantic-ai with an ``MCPToolset`` that starts each proxy's command (a URL works too)."""
    from fastmcp.client.transports import StdioTransport
    from pydantic_ai import Agent
    from pydantic_ai.mcp import MCPToolset
    from pydantic_ai.models.openai import OpenAIChatModel
    from pydantic_ai.providers.openai import OpenAIProvider

    provider = OpenAIProvider(base_url=env.llm_base_url, api_key=env.api_key)
    agent = Agent(OpenAIChatModel(env.model or MODEL, provider=provider), instructions=INSTRUCTIONS)
    toolsets = [MCPToolset(StdioTransport(**_stdio(s))) for s in env.mcp_servers.values()]
    return (await agent.run(instruction, toolsets=toolsets)).output  # opened for the run


async def langgraph(instruction: str, env: Environment) -> str:
    """LangGraph's functional API, its tools from ``langchain-mcp-adapters``.

    The adapters' default: ``client.get_tools()`` opens a session, and lists the
    tools again, for every call (recorded, and no loop: a client's housekeeping is
    not the agent's decision). They turn an MCP tool error into a failed tool
    message, so the loop needs no handling.
    """
    import httpx
    from langchain_core.messages import SystemMessage
    from langchain_mcp_adapters.client import MultiServerMCPClient
    from langchain_openai import ChatOpenAI
    from langgraph.func import entrypoint
    from pydantic import SecretStr

    client = MultiServerMCPClient(
        {n: {"url": s.url, "transport": "streamable_http"} for n, s in env.mcp_servers.items()}
    )
    tools = {t.name: t for t in await client.get_tools()}
    async with httpx.AsyncClient() as http:  # closed with the trial
        llm = ChatOpenAI(
            model=env.model or MODEL,
            base_url=env.llm_base_url,
            api_key=SecretStr(env.api_key),
            http_async_client=http,
        ).bind_tools(list(tools.values()))

        @entrypoint()
        async def loop(messages: list[Any]) -> str:
            while (reply := await llm.ainvoke(messages)).tool_calls:
                messages.append(reply)
                messages += [await tools[c["name"]].ainvoke(c) for c in reply.tool_calls]
            return str(reply.content)

        return str(await loop.ainvoke([SystemMessage(INSTRUCTIONS), ("user", instruction)]))
