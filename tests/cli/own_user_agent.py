"""An agent that brings its own simulated user (as tau2's orchestrator does): `--user agent`."""

from __future__ import annotations

from typing import Any

import httpx


def _ask(env: Any, system: str, text: str) -> str:
    body = {
        "model": "stub-1",
        "messages": [{"role": "system", "content": system}, {"role": "user", "content": text}],
    }
    reply = httpx.post(f"{env.llm_base_url}/chat/completions", json=body, timeout=60).json()
    return str(reply["choices"][0]["message"]["content"])


def agent(instruction: str, env: Any) -> str:
    """Its user speaks first (an LLM playing the customer), then it answers that user."""
    said = _ask(env, f"You play a customer. {instruction}", "Begin.")
    return _ask(env, "You are the shop's assistant.", said)


def no_tools(conn: Any) -> list[Any]:
    """No tools: the conversation is what is replayed."""
    return []
