"""``python _stdio.py ADDRESS``: a trial's MCP server over stdio, for agents that start commands.

For agents that start their MCP servers as commands (``MCPServerStdio``):
``env.mcp.command`` and ``env.mcp_servers[name].command`` run this file, so
the tools still run in the harness, in the trial, recorded. ``ADDRESS`` is

- ``unix:PATH`` (the recording proxy): stdin and stdout are handed to the
  proxy over that Unix socket (``SCM_RIGHTS``) and the relay waits until the
  proxy is done with them: the agent's pipes then lead to the proxy itself,
  with no process in between (MCP's stdio framing is the proxy's);
- ``http://...`` (the trial's world server): each newline-delimited
  JSON-RPC message is POSTed as it comes (a slow call does not hold the next
  one) and its answer written to stdout; notifications get no answer.

Only the standard library is used, and the file runs as a script (``-I -S``:
no site, no package import), so the relay starts in a few tens of milliseconds.
"""

from __future__ import annotations

import json
import os
import socket
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


def hand_over(address: str) -> int:
    """Hand stdin and stdout to the endpoint at ``unix:PATH``; wait until it is done."""
    conn = socket.socket(socket.AF_UNIX)
    try:
        conn.connect(address.removeprefix("unix:"))
        socket.send_fds(conn, [b"mcp"], [0, 1])
    except OSError as exc:
        print(f"the trial's MCP server at {address} is gone ({exc})", file=sys.stderr)
        return 1
    nowhere = os.open(os.devnull, os.O_RDWR)
    os.dup2(nowhere, 0)  # the pipes are the endpoint's now: the agent sees EOF when it is done
    os.dup2(nowhere, 1)
    conn.recv(1)
    return 0


def main(argv: list[str]) -> int:
    """Relay stdin to the server at ``argv[0]`` until stdin closes."""
    if len(argv) != 1:
        print("usage: python _stdio.py unix:PATH | URL", file=sys.stderr)
        return 2
    if argv[0].startswith("unix:"):
        return hand_over(argv[0])
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
