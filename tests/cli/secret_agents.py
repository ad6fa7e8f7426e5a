"""An agent that carries secrets everywhere a careless agent does.

It sends the ``--set api_key`` value as its LLM key and puts it in its answer,
reads a token from an allowed variable (``MY_TOKEN``) through a tool, passes it
to another tool as an argument, and gives that tool's error (which quotes
``PAYMENT_CRED``) back to the model as ``{"error": str(exc)}``.
"""

from __future__ import annotations

import json
import os
import sqlite3
from typing import Any

from recorder import Tool, tool


def make_tools(conn: sqlite3.Connection) -> list[Tool[..., Any]]:
    """``vault()``: the token; ``charge(card, token)``: refused, quoting the payment key."""

    def vault() -> dict[str, str]:
        """The service token."""
        return {"token": os.environ.get("MY_TOKEN", "")}

    def charge(card: str, token: str) -> dict[str, str]:
        """Charge a card."""
        conn.execute("INSERT INTO notes (text) VALUES (?)", (f"charged {card}",))
        raise RuntimeError(f"payment API refused {os.environ.get('PAYMENT_CRED')} for {token}")

    return [tool(vault), tool(charge, writes=True)]


def agent(instruction: str, env: Any) -> str:
    import openai

    key = env.settings["api_key"]
    client = openai.OpenAI(base_url=env.llm_base_url, api_key=key, max_retries=0)
    messages: list[Any] = [{"role": "user", "content": instruction}]
    token = ""
    while True:
        reply = client.chat.completions.create(model="m", messages=messages, tools=env.tools)
        message = reply.choices[0].message
        if not message.tool_calls:
            return f"{message.content} (key {key})"
        messages.append(message.model_dump(exclude_none=True))
        for call in message.tool_calls:
            args = json.loads(call.function.arguments or "{}")
            if call.function.name == "charge":
                args["token"] = token
            try:
                result: Any = env.call_tool(call.function.name, args)
                token = result.get("token", token) if isinstance(result, dict) else token
            except RuntimeError as exc:
                result = {"error": str(exc)}
            messages.append(
                {"role": "tool", "tool_call_id": call.id, "content": json.dumps(result)}
            )


CRASHES: list[int] = []


def crash(instruction: str, env: Any) -> str:
    """Does nothing; every other call falls over (its crash is what a report must show first)."""
    CRASHES.append(1)
    if len(CRASHES) % 2:
        raise RuntimeError("the agent fell over")
    return "nothing"
