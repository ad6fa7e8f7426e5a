"""Async agents: their coroutines run on one event loop per process, in the trial's context.

A trial stays a thread of the runner (its world, its recording); an agent
written ``async def agent(instruction, env)`` runs on a shared event loop in
a copy of that thread's context, so its recording sees its calls, while the
thread waits on a future. Many concurrent trials then do their network
waiting on one loop instead of in as many threads fighting over the GIL.
"""

from __future__ import annotations

import asyncio
import contextvars
import threading
from collections.abc import Awaitable
from concurrent.futures import Future
from typing import Any, TypeVar

T = TypeVar("T")

_loop: asyncio.AbstractEventLoop | None = None
_tasks: set[asyncio.Task[None]] = set()
_lock = threading.Lock()


def _shared_loop() -> asyncio.AbstractEventLoop:
    global _loop
    with _lock:
        if _loop is None:
            loop = asyncio.new_event_loop()
            threading.Thread(target=loop.run_forever, name="replay-agents", daemon=True).start()
            _loop = loop
        return _loop


def wait_for(awaitable: Awaitable[T]) -> T:
    """Run ``awaitable`` on the shared loop, in a copy of this thread's context; its result."""
    loop = _shared_loop()
    context = contextvars.copy_context()
    done: Future[T] = Future()

    async def run() -> None:
        try:
            done.set_result(await awaitable)
        except BaseException as exc:  # handed to the waiting thread as it is
            done.set_exception(exc)

    def start() -> None:
        # A task copies the context current when it is created: create it inside ours.
        task = context.run(loop.create_task, run())
        _tasks.add(task)  # the loop keeps only weak references to its tasks
        task.add_done_callback(_tasks.discard)

    loop.call_soon_threadsafe(start)
    return done.result()


def resolved(value: Any) -> Any:
    """``value``, awaited first if it is awaitable (an async agent's coroutine)."""
    return (
        wait_for(value)
        if asyncio.iscoroutine(value) or isinstance(value, asyncio.Future)
        else value
    )
