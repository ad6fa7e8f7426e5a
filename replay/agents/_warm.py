"""A zygote's warm-up: what an agent's first HTTP client imports, imported before any trial."""

from __future__ import annotations

import contextlib
import sys
from collections.abc import Callable
from typing import Any

_LOOPBACK = "http://127.0.0.1:9"
"""Where the warming clients point (they send nothing)."""


def _sdk(client: Any, *resources: str) -> None:
    """Touch an SDK client's ``resources`` and its platform headers, then close it.

    Its resources (``client.chat``...) import their modules on first use (the OpenAI SDK's
    chat completions: a third of a walled trial of the demo's agent), and its first
    request asks ``platform.platform()``, which runs ``uname -p`` in a subprocess; both
    are cached for the process: made here, the zygote's trials inherit them.
    """
    with client:
        for name in resources:
            getattr(client, name)
        client.platform_headers()


WARMERS: dict[str, Callable[[Any], None]] = {
    "httpx": lambda httpx: httpx.Client().close(),
    "openai": lambda openai: _sdk(
        openai.OpenAI(api_key="-", base_url=_LOOPBACK), "chat", "responses"
    ),
    "anthropic": lambda anthropic: _sdk(
        anthropic.Anthropic(api_key="-", base_url=_LOOPBACK), "messages"
    ),
}
"""By module: a client made, its common resources touched, and closed (what it imports
when made or first used is then imported; what it caches, cached)."""


def warm() -> None:
    """Import once, in the zygote, what an agent's first HTTP client imports when made.

    httpx imports its transport (httpcore, h11, h2, anyio, certifi: 70 modules) when its
    first client is made, not with ``import httpx``; the OpenAI and Anthropic SDKs theirs
    when their first client is. An agent that makes its client in the trial would import
    them again in every trial's process (~90 ms a trial, measured in the wall). For each
    of ``WARMERS``' modules the agent's import brought in, a client is made (an SDK's:
    ``_sdk``) and closed here; it sends nothing, and one that cannot be made is left to
    the trial.
    """
    for name, make in WARMERS.items():
        module = sys.modules.get(name)
        if module is not None:
            with contextlib.suppress(Exception):
                make(module)
