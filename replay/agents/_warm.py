"""A zygote's warm-up: what an agent's first HTTP client imports, imported before any trial."""

from __future__ import annotations

import contextlib
import sys
from collections.abc import Callable
from typing import Any

_LOOPBACK = "http://127.0.0.1:9"
"""Where the warming clients point (they send nothing)."""

WARMERS: dict[str, Callable[[Any], None]] = {
    "httpx": lambda httpx: httpx.Client().close(),
    "openai": lambda openai: openai.OpenAI(api_key="-", base_url=_LOOPBACK).close(),
    "anthropic": lambda anthropic: anthropic.Anthropic(api_key="-", base_url=_LOOPBACK).close(),
}
"""By module: a client made and closed, so that what it imports when made is imported."""


def warm() -> None:
    """Import once, in the zygote, what an agent's first HTTP client imports when made.

    httpx imports its transport (httpcore, h11, h2, anyio, certifi: 70 modules) when its
    first client is made, not with ``import httpx``; the OpenAI and Anthropic SDKs theirs
    when their first client is. An agent that makes its client in the trial would import
    them again in every trial's process (~90 ms a trial, measured in the wall). For each
    of ``WARMERS``' modules the agent's import brought in, a client is made and closed
    here; it sends nothing, and one that cannot be made is left to the trial.
    """
    for name, make in WARMERS.items():
        module = sys.modules.get(name)
        if module is not None:
            with contextlib.suppress(Exception):
                make(module)
