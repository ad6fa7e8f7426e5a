"""An agent on the OpenAI SDK, for the zygote's warm-up (``tests/e2e/test_zygote.py``)."""

from __future__ import annotations

import json
import sys
from typing import Any
from unittest import mock

import openai  # (a module-level import, as an agent built on the SDK has)

_LAZY = ("openai.resources.chat.chat", "openai.resources.responses.responses")


def openai_ready(instruction: str, env: Any) -> str:
    """Say what the SDK's first use imported, and the subprocesses its headers started."""
    missing = sorted(m for m in _LAZY if m not in sys.modules)
    spawned: list[Any] = []

    def popen(*args: Any, **kwargs: Any) -> Any:
        spawned.append(args)
        raise OSError("no subprocess here")  # (platform's `uname -p` takes it as absent)

    with mock.patch("subprocess.Popen", popen):
        with openai.OpenAI(api_key="-", base_url="http://127.0.0.1:9") as client:
            assert client.chat.completions is not None
            client.platform_headers()  # (what its first request sends)
    return json.dumps({"missing": missing, "spawned": len(spawned)})
