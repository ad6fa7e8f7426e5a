"""Per-request cost of recording, client by client, against the same client unrecorded.

Each client (requests, urllib3, http.client, aiohttp, httpx) posts distinct
chat-completion requests over a keep-alive connection to an endpoint in a
process of its own that answers at once (``_slow_llm`` with no delay; its CPU
is not this process's). Requests are sent in alternating blocks: a block
unrecorded (no session active, so no interceptor is even patched in), then a
block inside ``record(...)``, and so on, every request timed on its own (wall
and this process's CPU): machine noise hits both sides alike. Each block opens
its sync client afresh (vcrpy's stubs replace connection classes: a recorded
connection is made under them) and sends one untimed request first, which
opens the connection; opening and closing cassettes is not timed either.
Overhead = median(recorded) - median(unrecorded); the ratio is
median(recorded) / median(unrecorded).

The incumbent is the client itself, unrecorded. The target: <= 0.2 ms per
request for every client.

Run alone: ``python -m bench.record_clients [--quick]``.
"""

from __future__ import annotations

import argparse
import asyncio
import http.client
import importlib.util
import json
import statistics
import tempfile
import time
from collections.abc import Callable, Iterator
from contextlib import AbstractContextManager, nullcontext
from dataclasses import dataclass, field
from importlib.metadata import version
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import httpx
import urllib3

import recorder

from . import _slow_llm
from ._report import ms, ratio, table

TARGET_S = 0.15e-3
CLIENTS = ("requests", "urllib3", "http.client", "aiohttp", "httpx")
OPTIONAL = {"requests": "requests", "aiohttp": "aiohttp"}
"""Clients measured only when installed (the dev and frameworks extras)."""


@dataclass
class Timings:
    """Wall and CPU seconds of each request, recorded and not."""

    wall: list[float] = field(default_factory=list)
    cpu: list[float] = field(default_factory=list)

    def add(self, wall: float, cpu: float) -> None:
        self.wall.append(wall)
        self.cpu.append(cpu)


@dataclass
class Client:
    """One client's timings."""

    name: str
    plain: Timings = field(default_factory=Timings)
    recorded: Timings = field(default_factory=Timings)
    events: int = 0
    """HTTP events in the cassettes: every recorded request must be there."""

    @property
    def overhead(self) -> float:
        return statistics.median(self.recorded.wall) - statistics.median(self.plain.wall)

    @property
    def cpu_overhead(self) -> float:
        return statistics.median(self.recorded.cpu) - statistics.median(self.plain.cpu)

    @property
    def ok(self) -> bool:
        return self.overhead <= TARGET_S and self.events == len(self.recorded.wall)


@dataclass
class ClientsResult:
    """Everything ``run`` measured."""

    blocks: int
    block: int
    clients: list[Client]
    skipped: list[str] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        return all(c.ok for c in self.clients)

    @property
    def worst(self) -> Client:
        return max(self.clients, key=lambda c: c.overhead)


def _bodies(n: int) -> Iterator[bytes]:
    for i in range(n):
        yield json.dumps(
            {"model": "bench", "messages": [{"role": "user", "content": f"request {i}"}]}
        ).encode()


Send = Callable[[bytes], Any]
Open = Callable[[], tuple[Send, Callable[[], None]]]
HEADERS = {"content-type": "application/json"}


def _sync_clients(base: str) -> dict[str, Open]:
    """How to open each client: (send one request, close)."""
    url = base + "/chat/completions"
    parts = urlsplit(url)
    host, port = parts.hostname or "", parts.port

    def via_requests() -> tuple[Send, Callable[[], None]]:
        import requests

        session = requests.Session()
        return lambda body: session.post(url, data=body, headers=HEADERS).json(), session.close

    def via_urllib3() -> tuple[Send, Callable[[], None]]:
        pool = urllib3.HTTPConnectionPool(host, port, maxsize=1)
        return lambda body: pool.request("POST", parts.path, body=body, headers=HEADERS).json(), (
            pool.close
        )

    def via_http_client() -> tuple[Send, Callable[[], None]]:
        conn = http.client.HTTPConnection(host, port, timeout=30)

        def send(body: bytes) -> Any:
            conn.request("POST", parts.path, body, HEADERS)
            return json.loads(conn.getresponse().read())

        return send, conn.close

    def via_httpx() -> tuple[Send, Callable[[], None]]:
        client = httpx.Client(timeout=30)
        return lambda body: client.post(url, content=body, headers=HEADERS).json(), client.close

    return {
        "requests": via_requests,
        "urllib3": via_urllib3,
        "http.client": via_http_client,
        "httpx": via_httpx,
    }


def _blocks(
    client: Client, blocks: int, base: Path
) -> Iterator[tuple[Timings, AbstractContextManager[Any]]]:
    """(where to put the timings, the context to send in) for each block, alternating."""
    for n in range(blocks):
        yield client.plain, nullcontext()
        path = base / f"{client.name}-{n}.cassette"
        yield client.recorded, recorder.record(path, agent_version="bench", overwrite=True)


def _measure_sync(name: str, open_client: Open, blocks: int, block: int, base: Path) -> Client:
    """A client opened afresh in each block, its first request untimed (see the module doc)."""
    client = Client(name)
    bodies = _bodies(2 * blocks * (block + 1) + 20)
    send, close = open_client()
    for _ in range(20):  # warm the caches up, untimed
        send(next(bodies))
    close()
    for timings, context in _blocks(client, blocks, base):
        with context:
            send, close = open_client()
            try:
                send(next(bodies))
                for _ in range(block):
                    body = next(bodies)
                    w0, c0 = time.perf_counter(), time.process_time()
                    send(body)
                    timings.add(time.perf_counter() - w0, time.process_time() - c0)
            finally:
                close()
    client.events = _events(base, name, blocks) - blocks  # less the untimed first requests
    return client


def _measure_aiohttp(base_url: str, blocks: int, block: int, base: Path) -> Client:
    import aiohttp

    url = base_url + "/chat/completions"
    client = Client("aiohttp")
    bodies = _bodies(2 * blocks * (block + 1) + 20)

    async def main() -> None:
        connector = aiohttp.TCPConnector(limit=1)
        async with aiohttp.ClientSession(connector=connector) as session:

            async def send(body: bytes) -> Any:
                async with session.post(url, data=body, headers=HEADERS) as r:
                    return await r.json()

            for _ in range(20):
                await send(next(bodies))
            for timings, context in _blocks(client, blocks, base):
                with context:
                    await send(next(bodies))  # as the sync clients' first, untimed
                    for _ in range(block):
                        body = next(bodies)
                        w0, c0 = time.perf_counter(), time.process_time()
                        await send(body)
                        timings.add(time.perf_counter() - w0, time.process_time() - c0)

    asyncio.run(main())
    client.events = _events(base, "aiohttp", blocks) - blocks
    return client


def _events(base: Path, name: str, blocks: int) -> int:
    return sum(
        sum(isinstance(e, recorder.HttpEvent) for e in recorder.read_cassette(path).events)
        for path in (base / f"{name}-{n}.cassette" for n in range(blocks))
    )


def run(quick: bool = False, workdir: Path | None = None) -> ClientsResult:
    """Measure every client installed, unrecorded and recorded."""
    blocks, block = (4, 50) if quick else (10, 100)
    names = [n for n in CLIENTS if n not in OPTIONAL or importlib.util.find_spec(OPTIONAL[n])]
    process, base_url = _slow_llm.start(0.0)
    try:
        with tempfile.TemporaryDirectory(prefix="agent-replay-bench-") as tmp:
            base = workdir or Path(tmp)
            clients = _sync_clients(base_url)
            measured = [
                _measure_aiohttp(base_url, blocks, block, base)
                if name == "aiohttp"
                else _measure_sync(name, clients[name], blocks, block, base)
                for name in names
            ]
    finally:
        process.kill()
        process.join()
    return ClientsResult(blocks, block, measured, [n for n in CLIENTS if n not in names])


def report(r: ClientsResult) -> str:
    """Render the result as a table."""
    rows = []
    for c in r.clients:
        plain, rec = statistics.median(c.plain.wall), statistics.median(c.recorded.wall)
        rows.append(
            [
                c.name,
                ms(plain),
                ms(rec),
                ms(c.overhead),
                ratio(rec, plain),
                ms(c.cpu_overhead),
                ratio(statistics.median(c.recorded.cpu), statistics.median(c.plain.cpu)),
                f"{c.events}/{len(c.recorded.wall)}",
                f"<= 0.2 ms  {'ok' if c.ok else 'MISSED'}",
            ]
        )
    n = r.blocks * r.block
    out = table(
        f"Per-request time, recorded vs the same client unrecorded "
        f"(medians of {n:,} each, in blocks of {r.block})",
        [
            "client",
            "unrecorded",
            "recorded",
            "overhead",
            "recorded / unrecorded",
            "CPU overhead",
            "CPU ratio",
            "events",
            "target",
        ],
        rows,
    )
    libs = ", ".join(
        f"{name} {version(name)}"
        for name in ("requests", "urllib3", "aiohttp", "httpx")
        if importlib.util.find_spec(name) is not None
    )
    lines = [
        out,
        f"  {libs}.",
        "  One keep-alive connection per client to an endpoint in its own process that answers "
        "at once;",
        "  CPU = this process's CPU time per request; events = HTTP events found in the "
        "cassettes / requests recorded.",
    ]
    if r.skipped:
        lines.append(f"  not installed, not measured: {', '.join(r.skipped)}")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> None:
    """Run this benchmark alone."""
    parser = argparse.ArgumentParser(prog="python -m bench.record_clients", description=__doc__)
    parser.add_argument("--quick", action="store_true", help="fewer requests")
    args = parser.parse_args(argv)
    print(report(run(quick=args.quick)))


if __name__ == "__main__":
    main()
