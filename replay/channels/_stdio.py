"""``python _stdio.py ADDRESS``: a trial's MCP server over stdio, for agents that start commands.

For agents that start their MCP servers as commands (``MCPServerStdio``):
``env.mcp.command`` and ``env.mcp_servers[name].command`` run this file, so
the tools still run in the harness, in the trial, recorded. ``ADDRESS`` is

- ``tcp://HOST:PORT`` (the recording proxy): stdin and stdout are piped to
  one kept-open connection, byte for byte (MCP's stdio framing is the
  endpoint's), so notifications come back while a call runs;
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


def pipe(address: str) -> int:
    """Pipe stdin to ``tcp://HOST:PORT`` and what comes back to stdout, until both end."""
    host, _, port = address.removeprefix("tcp://").rpartition(":")
    try:
        conn = socket.create_connection((host, int(port)))
    except (OSError, ValueError) as exc:
        print(f"the trial's MCP server at {address} is gone ({exc})", file=sys.stderr)
        return 1
    conn.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)

    def back() -> None:
        while data := conn.recv(65536):
            os.write(1, data)

    answers = threading.Thread(target=back, daemon=True)
    answers.start()
    try:
        while data := os.read(0, 65536):
            conn.sendall(data)
        conn.shutdown(socket.SHUT_WR)  # the endpoint finishes what is under way, then closes
    except OSError:
        pass
    answers.join()
    return 0


def main(argv: list[str]) -> int:
    """Relay stdin to the server at ``argv[0]`` until stdin closes."""
    if len(argv) != 1:
        print("usage: python _stdio.py tcp://HOST:PORT | URL", file=sys.stderr)
        return 2
    if argv[0].startswith("tcp://"):
        return pipe(argv[0])
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
