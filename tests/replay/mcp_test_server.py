"""An MCP server made with the official SDK's FastMCP, for the proxy's tests.

``python mcp_test_server.py WORLD.db`` serves over stdio (``--http PORT``:
streamable HTTP on 127.0.0.1, with no world): a tool that reports
progress, one that writes to the world file, a resource, a prompt, and three
ways to fail (die, garble its stdout, hang).
"""

from __future__ import annotations

import os
import sqlite3
import sys
import time

from mcp.server.fastmcp import Context, FastMCP

HTTP = sys.argv[2] if sys.argv[1:2] == ["--http"] else None
app = FastMCP("replay-test-server", port=int(HTTP or 8000), log_level="WARNING")
WORLD = sys.argv[1] if len(sys.argv) > 1 and not HTTP else ":memory:"


@app.tool()
async def count(n: int, ctx: Context) -> str:  # type: ignore[type-arg]
    """Count to n, reporting each step as progress."""
    for i in range(n):
        await ctx.report_progress(i + 1, n, f"step {i + 1}")
    return f"counted to {n}"


@app.tool()
def note(text: str) -> str:
    """Write a note to the world."""
    with sqlite3.connect(WORLD) as conn:
        conn.execute("INSERT INTO notes (text) VALUES (?)", (text,))
    return f"noted {text}"


@app.tool()
def die(code: int = 3) -> str:
    """Exit at once, saying why on stderr."""
    sys.stderr.write("dying on purpose\n")
    sys.stderr.flush()
    os._exit(code)


@app.tool()
def garble() -> str:
    """Write a line that is not JSON-RPC where the protocol goes."""
    os.write(1, b"this is not JSON-RPC\n")
    return "garbled"


@app.tool()
def hang() -> str:
    """Never answer."""
    time.sleep(3600)
    return "woke"


@app.resource("notes://all")
def notes() -> str:
    """Every note in the world, one a line."""
    with sqlite3.connect(WORLD) as conn:
        return "\n".join(text for (text,) in conn.execute("SELECT text FROM notes ORDER BY id"))


@app.prompt()
def summarize(topic: str) -> str:
    """A prompt about a topic."""
    return f"Summarize what we know about {topic}."


if __name__ == "__main__":
    app.run("streamable-http" if HTTP else "stdio")
