"""An HTTP POST with a total deadline: connect, send and the whole answer, all within it.

httpx's ``timeout`` bounds each read, so a server trickling a byte a second
never trips a 5 s timeout. Here the call runs in a worker thread (in the
caller's context, so a recording around the caller still sees it) and the
caller waits for it no longer than the deadline: past it the call is given
up, its connection closed, and a late answer is never used. Used by the judge
and the simulated user (``surroundings._user``).
"""

from __future__ import annotations

import contextvars
import threading
from typing import Any

import httpx


class DeadlinePassed(httpx.TimeoutException):
    """No complete answer came within the deadline."""


def post_within(
    base_url: str, path: str, *, json: Any, headers: dict[str, str], deadline: float
) -> httpx.Response:
    """POST ``json`` to ``base_url``/``path`` and read the whole answer within ``deadline`` s.

    Raises:
        DeadlinePassed: The answer (or an error) had not come in full by then.
        httpx.HTTPError: The call failed before the deadline.
    """
    client = httpx.Client(base_url=base_url, timeout=deadline)
    outcome: list[httpx.Response | BaseException] = []
    done = threading.Event()

    def call() -> None:
        try:
            outcome.append(client.post(path, json=json, headers=headers))  # reads the body
        except BaseException as exc:  # handed to the caller, if it still waits
            outcome.append(exc)
        finally:
            done.set()

    worker = threading.Thread(
        target=contextvars.copy_context().run, args=(call,), name="replay-deadline", daemon=True
    )
    worker.start()
    finished = done.wait(deadline)
    # Given up: closing the pool ends the call at its next read at the latest (a
    # trickling server's next byte); what it returns then is dropped.
    client.close()
    if not finished:
        raise DeadlinePassed(f"no complete answer within {deadline:g}s")
    result = outcome[0]
    if isinstance(result, BaseException):
        raise result
    return result
