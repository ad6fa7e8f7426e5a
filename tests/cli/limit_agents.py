"""Agents and tools for the limits' tests: each does what its instruction says.

``talk N``: N LLM calls (the OpenAI SDK); ``read N``: one tool result of N
characters; ``sleep S``: sleep S seconds, then write a note (what the late
call met is kept in ``LATE``). As a program (``python -m
tests.cli.limit_agents``), ``talk N`` through the trial's LLM proxy.
"""

from __future__ import annotations

import asyncio
import os
import sqlite3
import sys
import threading
import weakref
from typing import Any

from recorder import Tool, tool

LATE: list[tuple[float, str]] = []
"""What each sleeping agent's call after its sleep met, by how long it slept."""
WAKE = threading.Event()
"""Set, every sleeping sync agent wakes at once (a test's way to end sleeps it outlived)."""


def make_tools(conn: sqlite3.Connection) -> list[Tool[..., Any]]:
    """``text(n)``: a result of n characters; ``note(text)``: writes a note."""

    def text(n: int) -> str:
        """A text of n characters."""
        return "x" * n

    def note(text: str) -> dict[str, int]:
        """Write a note."""
        cursor = conn.execute("INSERT INTO notes (text) VALUES (?)", (text,))
        return {"note": int(cursor.lastrowid or 0)}

    return [tool(text), tool(note, writes=True)]


def _count(instruction: str) -> float:
    return float(instruction.split()[-1])


def _talk(n: int, base_url: str, stream: bool = False) -> str:
    import openai

    client = openai.OpenAI(base_url=base_url, api_key="sk-test", max_retries=0)
    for turn in range(n):
        said = [{"role": "user", "content": f"turn {turn}: say something"}]
        if stream:  # (no stream_options: the replies report no usage)
            for _ in client.chat.completions.create(model="m", messages=said, stream=True):
                pass
        else:
            client.chat.completions.create(model="m", messages=said)  # type: ignore[arg-type]
    return "done"


def talk(instruction: str, env: Any) -> str:
    """``talk N``: N LLM calls; ``stream N``: N streamed ones, without usage."""
    return _talk(int(_count(instruction)), env.llm_base_url, instruction.startswith("stream"))


def read(instruction: str, env: Any) -> str:
    """``read N``: one tool result of N characters; an error for it is said in the answer."""
    try:
        env.call_tool("text", {"n": int(_count(instruction))})
    except Exception as exc:
        return f"done, but: {exc}"
    return "done"


_thread = threading.local()


def count_trials(instruction: str, env: Any) -> str:
    """``done N``: this is the Nth trial its thread ran (a count kept per thread)."""
    _thread.trials = getattr(_thread, "trials", 0) + 1
    return f"done {_thread.trials}"


ENVS: list[weakref.ref[Any]] = []


def remember(instruction: str, env: Any) -> str:
    """Answers ``done``, keeping a weak reference to its environment in ``ENVS``."""
    ENVS.append(weakref.ref(env))
    return "done"


def sleep(instruction: str, env: Any) -> str:
    """``sleep S``: sleep (until ``WAKE``, at most), then write a note (past its deadline:
    refused)."""
    seconds = _count(instruction)
    WAKE.wait(seconds)
    try:
        env.call_tool("note", {"text": "late"})
        LATE.append((seconds, "written"))
    except Exception as exc:
        LATE.append((seconds, f"{type(exc).__name__}: {exc}"))
    return "done"


async def sleep_async(instruction: str, env: Any) -> str:
    """``sleep S``, awaited: past its deadline it is cancelled."""
    seconds = _count(instruction)
    try:
        await asyncio.sleep(seconds)
    except asyncio.CancelledError:
        LATE.append((seconds, "cancelled"))
        raise
    env.call_tool("note", {"text": "in time"})
    LATE.append((seconds, "written"))
    return "done"


if __name__ == "__main__":  # an agent program: the instruction on stdin, the answer out
    print(_talk(int(_count(sys.stdin.read())), os.environ["OPENAI_BASE_URL"]))
