"""Driving a trial's steps: its agent's answer resolved here, or on the running loop.

A mode runs a trial as a generator that yields the agent's answer (a
coroutine for an async agent) and gets it back resolved: the same trial code
serves sync agents in threads and async agents as tasks on one loop.
"""

from __future__ import annotations

import functools
import inspect
from collections.abc import Callable, Generator
from typing import Any, ParamSpec, TypeVar

from ._async import resolved

T = TypeVar("T")
P = ParamSpec("P")
Steps = Generator[Any, Any, T]
"""A trial as steps: it yields the agent's answer to resolve (a coroutine for async agents)."""


def drive(steps: Steps[T]) -> T:
    """Run steps here: what they yield is resolved in this thread and sent back.

    A coroutine runs on the shared loop (see ``_async``); an exception is
    thrown back in.
    """
    return _drive(steps, resolved)


def _drive(steps: Steps[T], resolve: Callable[[Any], Any]) -> T:
    try:
        value = next(steps)
        while True:
            try:
                result = resolve(value)
            except BaseException as exc:  # the agent's: its recording records it
                value = steps.throw(exc)
            else:
                value = steps.send(result)
    except StopIteration as stop:
        return stop.value  # type: ignore[no-any-return]


async def drive_async(steps: Steps[T]) -> T:
    """Run steps on the running event loop: what they yield is awaited here."""
    try:
        value = next(steps)
        while True:
            try:
                result = await value if inspect.isawaitable(value) else value
            except BaseException as exc:
                value = steps.throw(exc)
            else:
                value = steps.send(result)
    except StopIteration as stop:
        return stop.value  # type: ignore[no-any-return]


def driven(steps: Callable[P, Steps[T]]) -> Callable[P, T]:
    """The plain function of a steps function: the same arguments, driven here."""

    @functools.wraps(steps)
    def run(*args: P.args, **kwargs: P.kwargs) -> T:
        return drive(steps(*args, **kwargs))

    run.__name__ = run.__qualname__ = steps.__name__.removesuffix("_steps")
    return run
