"""Agents that speak the chat-completions API over plain HTTP clients: requests and aiohttp.

As teams without an SDK write them: a JSON body, the answer streamed as SSE
or not, one turn's tool calls run in turn (requests) or at once (aiohttp).
"""

from __future__ import annotations

import asyncio
import inspect
import json
from collections.abc import Iterable
from typing import Any

import aiohttp
import requests

INSTRUCTIONS = "You keep a small shop's inventory. Check the stock before you reserve anything."
MODEL = "stub-inventory-1"


def _body(messages: list[dict[str, Any]], env: Any) -> dict[str, Any]:
    stream = bool(env.settings.get("stream"))
    return {
        "model": env.model or MODEL,
        "messages": messages,
        "tools": env.tools,
        "stream": stream,
        **({"stream_options": {"include_usage": True}} if stream else {}),
    }


def _start(instruction: str, env: Any) -> list[dict[str, Any]]:
    system = env.settings.get("instructions", INSTRUCTIONS)
    return [{"role": "system", "content": system}, {"role": "user", "content": instruction}]


def _from_events(lines: Iterable[str]) -> dict[str, Any]:
    """The assistant message a chat-completions SSE stream adds up to."""
    text, calls = [], {}
    for line in lines:
        if not line.startswith("data:") or line[5:].strip() == "[DONE]":
            continue
        for choice in json.loads(line[5:]).get("choices") or []:
            delta = choice.get("delta") or {}
            text.append(delta.get("content") or "")
            for part in delta.get("tool_calls") or []:
                call = calls.setdefault(part["index"], {"id": None, "name": "", "arguments": ""})
                call["id"] = part.get("id") or call["id"]
                call["name"] += (part.get("function") or {}).get("name") or ""
                call["arguments"] += (part.get("function") or {}).get("arguments") or ""
    tool_calls = [
        {
            "id": c["id"],
            "type": "function",
            "function": {"name": c["name"], "arguments": c["arguments"]},
        }
        for _, c in sorted(calls.items())
    ]
    return {"role": "assistant", "content": "".join(text) or None, "tool_calls": tool_calls}


def _results(message: dict[str, Any], values: list[Any]) -> list[dict[str, Any]]:
    return [
        {"role": "tool", "tool_call_id": call["id"], "content": json.dumps(value)}
        for call, value in zip(message["tool_calls"], values, strict=True)
    ]


def requests_agent(instruction: str, env: Any) -> str:
    """requests, streamed with ``stream=True`` and ``iter_lines`` when asked."""
    messages = _start(instruction, env)
    url = env.llm_base_url + "/chat/completions"
    headers = {"Authorization": f"Bearer {env.api_key}"}
    with requests.Session() as session:
        for _ in range(6):
            body = _body(messages, env)
            with session.post(url, json=body, headers=headers, stream=body["stream"]) as response:
                response.raise_for_status()
                if body["stream"]:
                    message = _from_events(response.iter_lines(decode_unicode=True))
                else:
                    message = response.json()["choices"][0]["message"]
            if not message.get("tool_calls"):
                return str(message["content"])
            messages.append(message)
            values = []
            for call in message["tool_calls"]:
                value = env.call_tool(
                    call["function"]["name"], json.loads(call["function"]["arguments"])
                )
                values.append(asyncio.run(_awaited(value)) if inspect.isawaitable(value) else value)
            messages += _results(message, values)
    return ""


async def _awaited(value: Any) -> Any:
    return await value


async def aiohttp_agent(instruction: str, env: Any) -> str:
    """aiohttp with ``json=``, streamed by ``async for line in response.content``."""
    messages = _start(instruction, env)
    url = env.llm_base_url + "/chat/completions"
    headers = {"Authorization": f"Bearer {env.api_key}"}
    async with aiohttp.ClientSession() as session:
        for _ in range(6):
            body = _body(messages, env)
            async with session.post(url, json=body, headers=headers) as response:
                response.raise_for_status()
                if body["stream"]:
                    message = _from_events([line.decode() async for line in response.content])
                else:
                    message = (await response.json())["choices"][0]["message"]
            if not message.get("tool_calls"):
                return str(message["content"])
            messages.append(message)

            async def run(call: dict[str, Any]) -> Any:
                value = env.call_tool(
                    call["function"]["name"], json.loads(call["function"]["arguments"])
                )
                return await value if inspect.isawaitable(value) else value

            messages += _results(message, await asyncio.gather(*map(run, message["tool_calls"])))
    return ""
