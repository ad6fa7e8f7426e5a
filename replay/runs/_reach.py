"""Whether the run's LLM endpoint answers at all, asked once before any trial runs.

An endpoint that is down would otherwise fail every trial inside the agent (its SDK
raising a connection error), and the run would say the agent got worse. A TCP
connection to ``--llm-url``'s host and port is tried: refused, unresolvable or
silent past ``TIMEOUT_S``, the run does not start (``LlmUnreachable``, exit 3).
``--no-llm-check`` skips it (an agent that never calls its LLM).
"""

from __future__ import annotations

import socket
from urllib.parse import urlsplit

from recorder import ReplayError

TIMEOUT_S = 10.0
"""Seconds the endpoint may take to accept a connection."""


class LlmUnreachable(ReplayError):
    """The run's LLM endpoint cannot be reached: infrastructure, not the agent (exit 3)."""

    exit_code = 3
    """``replay.ExitCode.INCOMPLETE``: the environment, not the input or the agent."""


def check_llm(url: str, timeout: float = TIMEOUT_S) -> None:
    """Connect to ``url``'s host and port once.

    Raises:
        LlmUnreachable: It refused, did not resolve, or did not answer in time.
    """
    parts = urlsplit(url)
    try:
        port = parts.port or (443 if parts.scheme == "https" else 80)
    except ValueError:
        port = None
    if not parts.hostname or port is None:
        raise LlmUnreachable(f"--llm-url {url!r} names no host and port to reach")
    try:
        with socket.create_connection((parts.hostname, port), timeout=timeout):
            pass
    except OSError as exc:
        why = exc.strerror or str(exc) or type(exc).__name__
        raise LlmUnreachable(
            f"the LLM at --llm-url {url} cannot be reached ({why}): start it or fix the URL "
            "(--no-llm-check if the agent never calls it); no trial ran"
        ) from None
