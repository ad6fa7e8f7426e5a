"""Python agents run walled in from a zygote (``tests/e2e/test_zygote.py``)."""

from __future__ import annotations

import contextlib
import json
import os
import socket
import sys
import time
from typing import Any

import httpx  # (a module-level import, as an agent built on the OpenAI SDK has)

IMPORTED_AT = time.time()
"""When this module was imported: the same in every trial a zygote forks."""
STATE: list[str] = []


def leave_traces(instruction: str, env: Any) -> str:
    """Say what earlier trials left, leave some, and reach for another host."""
    seen = {
        "tmp": os.path.exists("/tmp/left"),
        "state": list(STATE),
        "imported_at": IMPORTED_AT,
        "secret": os.environ.get("ZYGOTE_SECRET"),
        "allowed": os.environ.get("ZYGOTE_ALLOWED"),
        "path": bool(os.environ.get("PATH")),
    }
    private = ["/tmp", "/var/tmp", "/dev/shm", os.environ.get("HOME") or "/tmp"]
    seen["left"] = [d for d in private if os.path.exists(os.path.join(d, "left"))]
    for folder in private:
        with open(os.path.join(folder, "left"), "w") as left:
            left.write(instruction)
    STATE.append(instruction)
    with socket.socket() as conn:
        conn.settimeout(2)
        with contextlib.suppress(OSError):
            conn.connect(("10.9.9.9", 80))
    return json.dumps(seen)


def sleeps(instruction: str, env: Any) -> str:
    """Never answers in time."""
    time.sleep(60)
    return "late"


def hoards(instruction: str, env: Any) -> str:
    """Holds 400 MB."""
    held = bytearray(400 * 2**20)
    for i in range(0, len(held), 4096):
        held[i] = 1
    time.sleep(5)
    return str(len(held))


def no_tools(conn: Any) -> list[Any]:
    """No tools."""
    return []


def httpx_ready(instruction: str, env: Any) -> str:
    """Say whether httpx's transport was imported before this trial made a client."""
    before = sorted(m for m in ("httpcore", "h11", "certifi") if m not in sys.modules)
    with httpx.Client() as client:  # (what an SDK's client does when an agent makes it)
        made = client.timeout.read is not None
    return json.dumps({"missing": before, "made": made})
