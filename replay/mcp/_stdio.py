"""``python _stdio.py unix:PATH``: a trial's MCP endpoint over stdio, for agents that run one.

For agents that start their MCP servers as commands (``MCPServerStdio``):
``env.mcp.command`` and ``env.mcp_servers[name].command`` run this file, so
the tools still run in the harness, in the trial, recorded. Its stdin and
stdout are handed to the endpoint (``_jsonrpc``) over the Unix socket at
``PATH`` (``SCM_RIGHTS``) and the relay waits until the endpoint is done with
them: the agent's pipes then lead to the endpoint itself, with no process in
between (MCP's stdio framing is the endpoint's).

Only the standard library is used, and the file runs as a script (``-I -S``:
no site, no package import), so the relay starts in a few tens of milliseconds.
"""

from __future__ import annotations

import os
import socket
import sys


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
    """Hand stdin and stdout to the endpoint at ``argv[0]`` (``unix:PATH``)."""
    if len(argv) != 1 or not argv[0].startswith("unix:"):
        print("usage: python _stdio.py unix:PATH", file=sys.stderr)
        return 2
    return hand_over(argv[0])


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
