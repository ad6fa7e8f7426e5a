"""The demo agent: an ordinary tool-calling loop on the official OpenAI SDK."""

from __future__ import annotations

import json
from typing import Any

from openai import OpenAI

from recorder import Tool

SYSTEM_PROMPT = (
    "You are a customer-support agent for a small shop. Use the tools to act; "
    "check the order before changing anything; refund only what was paid; "
    "record every refund in the ledger and tell the customer by email."
)


def run_agent(
    instruction: str,
    tools: list[Tool[..., Any]],
    *,
    base_url: str,
    api_key: str = "sk-demo",
    model: str = "stub-shop-1",
    max_steps: int = 12,
) -> str:
    """Run the agent on one instruction and return its final answer."""
    by_name = {t.name: t for t in tools}
    messages: list[dict[str, Any]] = [
        {"role": "system", "content": SYSTEM_PROMPT},
        {"role": "user", "content": instruction},
    ]
    with OpenAI(base_url=base_url, api_key=api_key, max_retries=0) as client:
        for _ in range(max_steps):
            reply = client.chat.completions.create(
                model=model,
                messages=messages,  # type: ignore[arg-type]
                tools=[t.openai_schema() for t in tools],  # type: ignore[misc]
                temperature=0,
            )
            message = reply.choices[0].message
            if not message.tool_calls:
                return message.content or ""
            messages.append(message.model_dump(exclude_none=True))
            for call in message.tool_calls:
                messages.append(
                    {
                        "role": "tool",
                        "tool_call_id": call.id,
                        "content": _run_tool(by_name, call.function.name, call.function.arguments),
                    }
                )
    return "I could not finish within the step budget."


def _run_tool(tools: dict[str, Tool[..., Any]], name: str, arguments: str) -> str:
    if name not in tools:
        return json.dumps({"error": f"unknown tool {name}"})
    try:
        return json.dumps(tools[name](**json.loads(arguments or "{}")))
    except Exception as exc:  # the model sees the failure and may recover
        return json.dumps({"error": str(exc)})
