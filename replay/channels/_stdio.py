"""``python -m replay.channels._stdio URL``: a trial's MCP tool server over stdio.

For agents that start their MCP servers as commands (``MCPServerStdio``):
``env.mcp.command`` runs this, which relays each newline-delimited JSON-RPC
message from stdin to the trial's streamable-HTTP server at ``URL`` and
writes its answers to stdout, so the tools still run in the harness, in the
trial, recorded. Requests are relayed as they come (a slow call does not
hold the next one); notifications get no answer. Only the standard library
is used: the relay starts in a few tens of milliseconds.
"""

from __future__ import annotations

import json
import sys
import threading
import urllib.error
import urllib.request
from typing import Any, BinaryIO

HEADERS = {
    "Content-Type": "application/json",
    "Accept": "application/json, text/event-stream",
}


def relay(url: str, line: bytes, out: BinaryIO, lock: threading.Lock) -> None:
    """Send one message to ``url``; write its answer (or a JSON-RPC error) to ``out``."""
    try:
        message: Any = json.loads(line)
    except ValueError:
        return _write(out, lock, _error(None, -32700, "the message is not JSON"))
    ident = message.get("id") if isinstance(message, dict) else None
    request = urllib.request.Request(url, data=line, headers=HEADERS, method="POST")
    try:
        with urllib.request.urlopen(request, timeout=600) as response:
            body = response.read()
    except urllib.error.HTTPError as exc:
        body = exc.read()
        if not body.strip().startswith(b"{"):
            body = _error(ident, -32603, f"the trial's MCP server answered HTTP {exc.code}")
    except OSError as exc:
        body = _error(ident, -32603, f"the trial's MCP server at {url} is gone ({exc})")
    if ident is not None and body.strip():
        _write(out, lock, body)


def _error(ident: Any, code: int, message: str) -> bytes:
    return json.dumps(
        {"jsonrpc": "2.0", "id": ident, "error": {"code": code, "message": message}}
    ).encode()


def _write(out: BinaryIO, lock: threading.Lock, body: bytes) -> None:
    with lock:
        out.write(body.strip() + b"\n")
        out.flush()


def main(argv: list[str]) -> int:
    """Relay stdin to the server at ``argv[0]`` until stdin closes."""
    if len(argv) != 1:
        print("usage: python -m replay.channels._stdio URL", file=sys.stderr)
        return 2
    url, lock = argv[0], threading.Lock()
    running: list[threading.Thread] = []
    for line in sys.stdin.buffer:
        if line.strip():
            thread = threading.Thread(target=relay, args=(url, line, sys.stdout.buffer, lock))
            thread.start()
            running.append(thread)
    for thread in running:
        thread.join()
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
