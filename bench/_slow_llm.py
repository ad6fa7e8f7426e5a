"""A minimal OpenAI-compatible endpoint that answers every chat call after a fixed delay.

An asyncio protocol, raw HTTP/1.1 with keep-alive: thousands of concurrent calls cost it
almost no CPU, so the executor benchmark measures the harness, not the stub
(``replay.stub_llm`` parses requests with ``http.server``, ~0.4 ms each).
"""

from __future__ import annotations

import asyncio
import json
import multiprocessing
from typing import Any

BODY = json.dumps(
    {
        "id": "chatcmpl-bench",
        "object": "chat.completion",
        "created": 0,
        "model": "bench",
        "choices": [
            {
                "index": 0,
                "message": {"role": "assistant", "content": "ok"},
                "finish_reason": "stop",
            }
        ],
        "usage": {"prompt_tokens": 5, "completion_tokens": 1, "total_tokens": 6},
    }
).encode()
RESPONSE = (
    b"HTTP/1.1 200 OK\r\ncontent-type: application/json\r\n"
    + f"content-length: {len(BODY)}\r\n\r\n".encode()
    + BODY
)


class _Answer(asyncio.Protocol):
    """One connection: each request (HTTP/1.1, keep-alive, pipelining allowed) is answered
    ``delay`` seconds after it arrived, in order. A protocol, not streams: the endpoint
    stands in for a remote one, so it should cost this machine as little as it can."""

    def __init__(self, delay: float) -> None:
        self.delay = delay
        self.buffer = b""
        self.transport: asyncio.Transport | None = None
        self.loop = asyncio.get_running_loop()

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        assert isinstance(transport, asyncio.Transport)
        self.transport = transport

    def data_received(self, data: bytes) -> None:
        self.buffer += data
        while (end := self.buffer.find(b"\r\n\r\n")) >= 0:
            length = 0
            for line in self.buffer[:end].split(b"\r\n"):
                if line[:15].lower() == b"content-length:":
                    length = int(line[15:])
            if len(self.buffer) < end + 4 + length:
                return  # the body is still coming
            self.buffer = self.buffer[end + 4 + length :]
            self.loop.call_later(self.delay, self._answer)

    def _answer(self) -> None:
        if self.transport is not None and not self.transport.is_closing():
            self.transport.write(RESPONSE)

    def connection_lost(self, exc: Exception | None) -> None:
        self.transport = None


async def _serve(delay: float, ports: Any) -> None:
    loop = asyncio.get_running_loop()
    server = await loop.create_server(lambda: _Answer(delay), "127.0.0.1", 0, backlog=1024)
    ports.put(server.sockets[0].getsockname()[1])
    async with server:
        await server.serve_forever()


def serve(delay: float, ports: Any) -> None:
    """Serve until killed; put the port on ``ports`` once listening."""
    asyncio.run(_serve(delay, ports))


def start(delay: float) -> tuple[Any, str]:
    """Start the endpoint in a process of its own; return it and its base URL."""
    context = multiprocessing.get_context("spawn")
    ports = context.Queue()
    process = context.Process(target=serve, args=(delay, ports), daemon=True)
    process.start()
    return process, f"http://127.0.0.1:{ports.get(timeout=60)}/v1"
