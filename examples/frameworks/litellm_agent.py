"""A hand-written tool loop on litellm, sync (``agent``) and async (``async_agent``)."""

from __future__ import annotations

import asyncio
import inspect
import json
from typing import TYPE_CHECKING, Any

import litellm

if TYPE_CHECKING:
    from replay import Environment

INSTRUCTIONS = "You keep a small shop's inventory. Check the stock before you reserve anything."
MODEL = "stub-inventory-1"
MAX_STEPS = 6


def _request(instruction: str, env: Environment) -> dict[str, Any]:
    stream = bool(env.settings.get("stream"))
    return {
        "stream": stream,
        # Without it a stream reports no usage, and the trial's tokens are unknown.
        **({"stream_options": {"include_usage": True}} if stream else {}),
        "model": f"openai/{env.model or MODEL}",
        "api_base": env.llm_base_url,
        "api_key": env.api_key,
        "tools": env.tools,
        "messages": [
            {"role": "system", "content": env.settings.get("instructions", INSTRUCTIONS)},
            {"role": "user", "content": instruction},
        ],
    }


def _turn(message: Any) -> dict[str, Any]:
    return {
        "role": "assistant",
        "content": message.content,
        "tool_calls": [
            {"id": c.id, "type": "function", "function": c.function.model_dump()}
            for c in message.tool_calls
        ],
    }


def _result(call: Any, value: Any) -> dict[str, Any]:
    return {"role": "tool", "tool_call_id": call.id, "content": json.dumps(value)}


def _reply(response: Any, stream: bool, chunks: list[Any]) -> Any:
    if stream:
        return litellm.stream_chunk_builder(chunks).choices[0].message
    return response.choices[0].message


def agent(instruction: str, env: Environment) -> str:
    """The sync loop: ``litellm.completion``; an async tool is run to its end here."""
    request = _request(instruction, env)
    stream = request["stream"]
    for _ in range(MAX_STEPS):
        response = litellm.completion(**request)
        message = _reply(response, stream, list(response) if stream else [])
        if not message.tool_calls:
            return str(message.content)
        request["messages"].append(_turn(message))
        for call in message.tool_calls:
            value = env.call_tool(call.function.name, json.loads(call.function.arguments))
            if inspect.isawaitable(value):
                value = _run_apart(value)
            request["messages"].append(_result(call, value))
    return ""


def _run_apart(awaitable: Any) -> Any:
    """Run an async tool on a loop of its own, leaving the thread's current loop alone.

    Not ``asyncio.run``: it unsets the thread's loop when it ends, and litellm's sync calls
    make one current (``asyncio.get_event_loop()`` in its service logger) that nobody closes;
    unset, it is collected unclosed.
    """

    async def awaited() -> Any:
        return await awaitable

    loop = asyncio.new_event_loop()
    try:
        return loop.run_until_complete(awaited())
    finally:
        loop.run_until_complete(loop.shutdown_asyncgens())
        loop.close()


async def async_agent(instruction: str, env: Environment) -> str:
    """The async loop: ``litellm.acompletion``, one turn's tool calls run concurrently."""
    request = _request(instruction, env)
    stream = request["stream"]
    for _ in range(MAX_STEPS):
        response = await litellm.acompletion(**request)
        chunks = [chunk async for chunk in response] if stream else []
        message = _reply(response, stream, chunks)
        if not message.tool_calls:
            return str(message.content)
        request["messages"].append(_turn(message))

        async def run(call: Any) -> Any:
            value = env.call_tool(call.function.name, json.loads(call.function.arguments))
            return await value if inspect.isawaitable(value) else value

        values = await asyncio.gather(*(run(call) for call in message.tool_calls))
        calls = message.tool_calls
        request["messages"] += [_result(c, v) for c, v in zip(calls, values, strict=True)]
    return ""
