"""The recording MCP proxy's per-call overhead: mcp-server-sqlite called through it and directly.

Both sides use the official client over stdio against the same server on a
file of the same world, and make the same ``read_query`` calls in one
session: directly (the client starts the server), and through the trial's
proxy in a sandbox trial (``env.mcp_servers["sqlite"].command``: the relay,
the proxy's MCP server, the recorded tool call, the server). The overhead is
(proxied - direct) per call, measured at two numbers of calls, so a cost
that grows with what has been recorded shows as a difference between them.
Each way runs several rounds, interleaved, and the median round counts:
on two cores a neighbour's burst moves a single round by a millisecond.

Run alone: ``python -m bench.mcp_proxy [--quick]``.
"""

from __future__ import annotations

import argparse
import asyncio
import sqlite3
import statistics
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ._report import ms, table

TARGET_MS = 0.5
"""The target: the proxy adds at most 0.5 ms per call, whatever the number recorded."""
FIXTURE = "CREATE TABLE notes (id INTEGER PRIMARY KEY, text TEXT);\n" + "".join(
    f"INSERT INTO notes (text) VALUES ('note {i}');\n" for i in range(100)
)
CASE = "id: bench\ninstruction: read\nfixture: notes.sql\n"


def ok(points: list[Point]) -> bool:
    """Under the target at every number of calls."""
    return all(p.overhead * 1000 <= TARGET_MS for p in points)


@dataclass(frozen=True)
class Point:
    """One number of calls, both ways."""

    calls: int
    direct_s: float
    proxied_s: float

    @property
    def overhead(self) -> float:
        """Seconds the proxy adds per call."""
        return (self.proxied_s - self.direct_s) / self.calls


def available() -> bool:
    """Whether the mcp SDK and mcp-server-sqlite are installed (the frameworks extra)."""
    try:
        import mcp  # noqa: F401
    except ImportError:
        return False
    return _server().exists()


def _server() -> Path:
    return Path(sys.executable).with_name("mcp-server-sqlite")


async def _calls(command: list[str], n: int) -> float:
    """Seconds for ``n`` read_query calls in one session (after initialize and one warm call)."""
    from mcp import ClientSession, StdioServerParameters
    from mcp.client.stdio import stdio_client

    params = StdioServerParameters(command=command[0], args=command[1:])
    async with stdio_client(params) as (read, write), ClientSession(read, write) as session:
        await session.initialize()
        await session.call_tool("read_query", {"query": "SELECT count(*) FROM notes"})
        started = time.perf_counter()
        for i in range(n):
            await session.call_tool(
                "read_query", {"query": f"SELECT text FROM notes WHERE id = {i % 100 + 1}"}
            )
        return time.perf_counter() - started


def run(quick: bool = False, smoke: bool = False) -> list[Point]:
    """Both ways at two numbers of calls (``smoke``: few, once: that it runs)."""
    from replay import McpServer, load_case, sandbox

    counts, rounds = ((10, 40), 1) if smoke else ((50, 200), 3) if quick else ((200, 1000), 5)
    points: list[Point] = []
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        (root / "notes.sql").write_text(FIXTURE)
        (root / "case.yaml").write_text(CASE)
        db = root / "direct.db"
        with sqlite3.connect(db) as conn:
            conn.executescript(FIXTURE)
        case = load_case(root / "case.yaml")
        servers = {"sqlite": McpServer(command=[str(_server()), "--db-path", "{world}"])}
        for n in counts:
            direct: list[float] = []
            proxied: list[float] = []

            async def agent(
                instruction: str, env: Any, n: int = n, proxied: list[float] = proxied
            ) -> str:
                proxied.append(await _calls(env.mcp_servers["sqlite"].command, n))
                return "done"

            for _ in range(rounds):
                direct.append(asyncio.run(_calls([str(_server()), "--db-path", str(db)], n)))
                sandbox(
                    case,
                    agent,
                    lambda conn: [],
                    root / f"proxied-{n}.cassette",
                    llm_base_url="http://127.0.0.1:9/v1",
                    mcp_servers=servers,
                )
            points.append(Point(n, statistics.median(direct), statistics.median(proxied)))
    return points


def report(points: list[Point]) -> str:
    """The table."""
    rows = [
        [f"{p.calls:,}", ms(p.direct_s / p.calls), ms(p.proxied_s / p.calls), ms(p.overhead)]
        for p in points
    ]
    return table(
        "MCP proxy: mcp-server-sqlite read_query over stdio, per call",
        ["calls", "direct", "through the proxy", "overhead"],
        rows,
    )


def main() -> None:
    """Run and print."""
    parser = argparse.ArgumentParser(prog="python -m bench.mcp_proxy", description=__doc__)
    parser.add_argument("--quick", action="store_true")
    if not available():
        print("mcp proxy: skipped (the mcp SDK or mcp-server-sqlite is not installed)")
        return
    print(report(run(quick=parser.parse_args().quick)))


if __name__ == "__main__":
    main()
