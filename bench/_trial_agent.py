"""The benchmark's agents: 10 LLM calls, one tool call, no thinking of their own.

``agent`` speaks through ``http.client`` (what ``requests`` and ``urllib3``
build on; recorded through vcrpy), ``httpx_agent`` through an
``httpx.Client`` (what the OpenAI and Anthropic SDKs use), ``async_agent``
through an ``httpx.AsyncClient`` (its trials run as tasks on one event loop
per worker). Each keeps its connections open across trials, as a
long-lived agent does.
"""

from __future__ import annotations

import http.client
import json
import sqlite3
import threading
import time
from typing import Any
from urllib.parse import urlsplit

import httpx

from recorder import Tool, tool

CALLS = 10

_local = threading.local()
_JSON = {"content-type": "application/json"}


def _body(instruction: str, n: int) -> dict[str, Any]:
    return {"model": "bench", "messages": [{"role": "user", "content": f"{instruction} {n}"}]}


def agent(instruction: str, env: Any) -> str:
    """Ask the model ``CALLS`` times (``http.client``), note the answer with the tool, answer."""
    url = urlsplit(env.llm_base_url)
    conn = getattr(_local, "conn", None)
    if conn is None:  # one keep-alive connection per thread (http.client's are not shared)
        conn = _local.conn = http.client.HTTPConnection(url.hostname or "", url.port, timeout=30)
    for n in range(CALLS):
        body = json.dumps(_body(instruction, n))
        conn.request("POST", f"{url.path}/chat/completions", body, _JSON)
        response = conn.getresponse()
        response.read()
        if response.status != 200:
            raise RuntimeError(f"the model answered {response.status}")
    env.call_tool("note", {"text": instruction})
    return "done"


_clients: dict[str, httpx.Client] = {}
_lock = threading.Lock()


def _client(base_url: str) -> httpx.Client:
    """One client per endpoint and process (a new client loads the system's CA certificates:
    ~25 ms, more than a whole trial costs the harness)."""
    with _lock:
        if base_url not in _clients:
            limits = httpx.Limits(max_connections=256, max_keepalive_connections=256)
            _clients[base_url] = httpx.Client(base_url=base_url, timeout=30, limits=limits)
        return _clients[base_url]


def httpx_agent(instruction: str, env: Any) -> str:
    """``agent`` through an ``httpx.Client``."""
    client = _client(env.llm_base_url)
    for n in range(CALLS):
        client.post("chat/completions", json=_body(instruction, n)).raise_for_status()
    env.call_tool("note", {"text": instruction})
    return "done"


def timed_agent(instruction: str, env: Any) -> str:
    """``httpx_agent`` with a client of its own, answering what each step took inside it.

    The answer is JSON: milliseconds to make the ``httpx.Client`` (``client``), each of
    the ``CALLS`` LLM calls (``calls``) and the tool call (``tool``), timed in the agent's
    own process, so a walled trial's figures hold what the walls add and nothing else.
    """
    started = time.perf_counter()
    with httpx.Client(base_url=env.llm_base_url, timeout=30) as client:
        made = time.perf_counter()
        calls = []
        for n in range(CALLS):
            before = time.perf_counter()
            client.post("chat/completions", json=_body(instruction, n)).raise_for_status()
            calls.append(time.perf_counter() - before)
        before = time.perf_counter()
        env.call_tool("note", {"text": instruction})
        tool = time.perf_counter() - before
    ms = 1000.0
    return json.dumps({"client": (made - started) * ms, "calls": [c * ms for c in calls],
                       "tool": tool * ms})  # fmt: skip


_async_clients: dict[str, httpx.AsyncClient] = {}


async def async_agent(instruction: str, env: Any) -> str:
    """``agent`` with ``async def`` and an ``httpx.AsyncClient`` (one per endpoint and loop)."""
    client = _async_clients.get(env.llm_base_url)
    if client is None:  # the runner has one event loop per process: no lock needed
        limits = httpx.Limits(max_connections=1024, max_keepalive_connections=1024)
        client = httpx.AsyncClient(base_url=env.llm_base_url, timeout=30, limits=limits)
        _async_clients[env.llm_base_url] = client
    for n in range(CALLS):
        (await client.post("chat/completions", json=_body(instruction, n))).raise_for_status()
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
