"""The demo agent: an ordinary tool-calling loop on the official OpenAI SDK.

``agent(instruction, env)`` is the entry point ``replay run --agent
examples.shop:agent`` calls (see ``replay.Environment``);
``run_agent`` is the same loop for code that holds its tools directly.
"""

from __future__ import annotations

import contextlib
import json
from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING, Any

import httpx
from openai import OpenAI

from recorder import Tool

if TYPE_CHECKING:
    from replay import Environment

SYSTEM_PROMPT = (
    "You are a customer-support agent for a small shop. Use the tools to act; "
    "check the order before changing anything; refund only what was paid; "
    "record every refund in the ledger and tell the customer by email."
)


def agent(instruction: str, env: Environment) -> str:
    """The agent entry point: one instruction, an environment, the final answer.

    With ``--set notify_url=URL`` it also posts its answer there when done (best
    effort), as a team's agent might tell a dashboard: in the sandbox, a host it
    may not reach (``make demo`` shows the violation that fails the trial).
    """
    answer = loop(
        instruction,
        env.tools,
        env.call_tool,
        base_url=env.llm_base_url,
        api_key=env.api_key,
        model=env.model or "stub-shop-1",
        system_prompt=str(env.settings.get("system_prompt", SYSTEM_PROMPT)),
        max_steps=int(env.settings.get("max_steps", 12)),
        user=env.user.say if env.user is not None else None,
    )
    if notify := env.settings.get("notify_url"):
        with contextlib.suppress(Exception):  # a notification is no reason to fail anyone
            httpx.post(str(notify), json={"answer": answer}, timeout=5)
    return answer


def run_agent(
    instruction: str,
    tools: list[Tool[..., Any]],
    *,
    base_url: str,
    api_key: str = "sk-demo",
    model: str = "stub-shop-1",
    max_steps: int = 12,
) -> str:
    """Run the agent with tools it holds directly; return its final answer."""
    by_name = {t.name: t for t in tools}

    def call(name: str, arguments: Mapping[str, Any]) -> Any:
        if name not in by_name:
            raise LookupError(f"unknown tool {name}")
        return by_name[name](**arguments)

    return loop(
        instruction,
        [t.openai_schema() for t in tools],
        call,
        base_url=base_url,
        api_key=api_key,
        model=model,
        max_steps=max_steps,
    )


def loop(
    instruction: str,
    tools: list[dict[str, Any]],
    call_tool: Callable[[str, Mapping[str, Any]], Any],
    *,
    base_url: str,
    api_key: str,
    model: str,
    system_prompt: str = SYSTEM_PROMPT,
    max_steps: int = 12,
    user: Callable[[str], str | None] | None = None,
) -> str:
    """The agent loop: ask the model, run the tools it calls, until it answers.

    With ``user`` (a multi-turn conversation), an answer goes to the user and
    the user's reply continues the loop, until the user ends the conversation.
    """
    messages: list[dict[str, Any]] = [
        {"role": "system", "content": system_prompt},
        {"role": "user", "content": instruction},
    ]
    with OpenAI(base_url=base_url, api_key=api_key, max_retries=0) as client:
        for _ in range(max_steps):
            reply = client.chat.completions.create(
                model=model,
                messages=messages,  # type: ignore[arg-type]
                tools=tools,  # type: ignore[arg-type]
                temperature=0,
            )
            message = reply.choices[0].message
            if not message.tool_calls:
                text = message.content or ""
                heard = user(text) if user is not None else None
                if heard is None:
                    return text
                messages.append({"role": "assistant", "content": text})
                messages.append({"role": "user", "content": heard})
                continue
            messages.append(message.model_dump(exclude_none=True))
            for call in message.tool_calls:
                result = _run_tool(call_tool, call.function.name, call.function.arguments)
                messages.append({"role": "tool", "tool_call_id": call.id, "content": result})
    return "I could not finish within the step budget."


def _run_tool(call_tool: Callable[[str, Mapping[str, Any]], Any], name: str, arguments: str) -> str:
    try:
        return json.dumps(call_tool(name, json.loads(arguments or "{}")), default=str)
    except Exception as exc:  # the model sees the failure and may recover
        return json.dumps({"error": str(exc)})
