"""A started server's stdout is read by the calls waiting on it, whichever call it answers.

The call that reads delivers the other calls' answers and progress too, and
hands the reading on when its own answer is in; a server that exits between
calls fails the next one with its last words; a call reading is woken when
another one gives up on the server.
"""

from __future__ import annotations

import sys
import threading
import time
from pathlib import Path
from typing import Any

import pytest

from replay.mcp import McpServerFailed
from replay.mcp._process import StdioUpstream
from tests.helpers import HANG_GUARD_S

SERVER = """
import json, sys, time
waiting = {}
for line in sys.stdin:
    message = json.loads(line)
    name = message["params"]["name"]
    if name == "exit":
        print("leaving now", file=sys.stderr, flush=True)
        sys.exit(4)
    if name == "hang" or "id" not in message:
        continue
    waiting[name] = message
    if {"early", "late"} <= waiting.keys():
        for name in ("early", "late"):
            asked = waiting.pop(name)
            token = asked["params"].get("_meta", {}).get("progressToken")
            if token is not None:
                note = {"progressToken": token, "progress": 1, "message": name}
                print(json.dumps({"jsonrpc": "2.0", "method": "notifications/progress",
                                  "params": note}), flush=True)
            result = {"content": [{"type": "text", "text": name}]}
            print(json.dumps({"jsonrpc": "2.0", "id": asked["id"], "result": result}), flush=True)
            time.sleep(0.2)
    elif name == "alone":
        print(json.dumps({"jsonrpc": "2.0", "id": message["id"], "result": {}}), flush=True)
"""


def _upstream(tmp_path: Path, timeout: float = 10) -> StdioUpstream:
    script = tmp_path / "server.py"
    script.write_text(SERVER)
    upstream = StdioUpstream("fake", [sys.executable, str(script)], {}, timeout)
    upstream.start()
    return upstream


def _call(upstream: StdioUpstream, name: str, out: dict[str, Any]) -> None:
    told: list[dict[str, Any]] = []
    params = {"name": name, "_meta": {"progressToken": f"agent-{name}"}}
    try:
        result, progress = upstream.request("tools/call", params, told.append)
        out[name] = (result["content"][0]["text"], progress, told)
    except Exception as exc:
        out[name] = exc


@pytest.mark.parametrize("first", ["early", "late"])
def test_concurrent_calls_each_get_their_answer_and_progress(tmp_path: Path, first: str) -> None:
    """The first call reads; the other's answer comes first (delivered) or last (handed on)."""
    upstream = _upstream(tmp_path)
    out: dict[str, Any] = {}
    second = "late" if first == "early" else "early"
    try:
        threads = [threading.Thread(target=_call, args=(upstream, n, out)) for n in (first, second)]
        threads[0].start()
        time.sleep(0.1)  # the first call is reading by now
        threads[1].start()
        for thread in threads:
            thread.join(timeout=10)
    finally:
        upstream.close()
    for name in ("early", "late"):
        text, progress, told = out[name]
        assert text == name
        assert progress == [{"progress": 1, "message": name}]
        assert told == [
            {
                "jsonrpc": "2.0",
                "method": "notifications/progress",
                "params": {"progressToken": f"agent-{name}", "progress": 1, "message": name},
            }
        ]


def test_a_server_that_exits_between_calls_fails_the_next_with_its_last_words(
    tmp_path: Path,
) -> None:
    upstream = _upstream(tmp_path)
    try:
        assert upstream.request("tools/call", {"name": "alone"}, print)[0] == {}
        upstream.notify("tools/call", {"name": "exit"})  # (a notification: nothing to read)
        time.sleep(0.5)
        with pytest.raises(McpServerFailed, match=r"exited \(code 4\): leaving now"):
            upstream.request("tools/call", {"name": "alone"}, print)
    finally:
        upstream.close()


def test_a_reading_call_stops_when_another_gives_up_on_the_server(tmp_path: Path) -> None:
    upstream = _upstream(tmp_path, timeout=30)
    out: dict[str, Any] = {}
    try:
        reading = threading.Thread(target=_call, args=(upstream, "hang", out))
        reading.start()
        time.sleep(0.2)
        with pytest.raises(McpServerFailed, match=r"did not answer tools/call within 0\.5 s"):
            upstream.request("tools/call", {"name": "hang"}, print, timeout=0.5)
        reading.join(timeout=HANG_GUARD_S)  # (a hang guard: which failure ended it says why)
        assert not reading.is_alive()
    finally:
        upstream.close()
    assert isinstance(out["hang"], McpServerFailed)
    assert "did not answer tools/call within 0.5 s" in str(out["hang"])
