"""The benchmark's agents: 10 LLM calls through httpx, one tool call, no thinking of their own.

``agent`` blocks (a thread per trial in flight); ``async_agent`` is the same
written ``async def`` (its trials run as tasks on one event loop per worker).
"""

from __future__ import annotations

import sqlite3
import threading
from typing import Any

import httpx

from recorder import Tool, tool

CALLS = 10


_clients: dict[str, httpx.Client] = {}
_lock = threading.Lock()


def _client(base_url: str) -> httpx.Client:
    """One client per endpoint and process, as a long-lived agent keeps (a new client
    loads the system's CA certificates: ~25 ms, more than our whole per-trial cost)."""
    with _lock:
        if base_url not in _clients:
            limits = httpx.Limits(max_connections=256, max_keepalive_connections=256)
            _clients[base_url] = httpx.Client(base_url=base_url, timeout=30, limits=limits)
        return _clients[base_url]


def agent(instruction: str, env: Any) -> str:
    """Ask the model ``CALLS`` times, note the answer with the one tool, answer."""
    client = _client(env.llm_base_url)
    for n in range(CALLS):
        body = {"model": "bench", "messages": [{"role": "user", "content": f"{instruction} {n}"}]}
        client.post("chat/completions", json=body).raise_for_status()
    env.call_tool("note", {"text": instruction})
    return "done"


_async_clients: dict[str, httpx.AsyncClient] = {}


async def async_agent(instruction: str, env: Any) -> str:
    """``agent`` with ``async def`` and an ``httpx.AsyncClient`` (one per endpoint and loop)."""
    client = _async_clients.get(env.llm_base_url)
    if client is None:  # the runner has one event loop per process: no lock needed
        limits = httpx.Limits(max_connections=1024, max_keepalive_connections=1024)
        client = httpx.AsyncClient(base_url=env.llm_base_url, timeout=30, limits=limits)
        _async_clients[env.llm_base_url] = client
    for n in range(CALLS):
        body = {"model": "bench", "messages": [{"role": "user", "content": f"{instruction} {n}"}]}
        (await client.post("chat/completions", json=body)).raise_for_status()
    env.call_tool("note", {"text": instruction})
    return "done"


def tools(conn: sqlite3.Connection) -> list[Tool[..., Any]]:
    """One writing tool."""

    @tool(writes=True)
    def note(text: str) -> int:
        """Write a note.

        Args:
            text: The note.
        """
        cur = conn.execute("INSERT INTO notes (text) VALUES (?)", (text,))
        return int(cur.lastrowid or 0)

    return [note]
