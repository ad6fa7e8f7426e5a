"""An agent that reaches past its LLM: a service it may be allowed, and the cloud's metadata."""

from __future__ import annotations

from typing import Any

import httpx


def agent(instruction: str, env: Any) -> str:
    """GET the service at ``settings["port"]``, then the metadata address; say what answered."""
    said = []
    for url in (f"http://localhost:{env.settings['port']}/", "http://169.254.169.254/latest/"):
        try:
            said.append(httpx.get(url, timeout=5).text)
        except Exception as exc:  # refused by the sandbox (or unreachable)
            said.append(type(exc).__name__)
    return " | ".join(said)


def no_tools(conn: Any) -> list[Any]:
    """No tools."""
    return []
