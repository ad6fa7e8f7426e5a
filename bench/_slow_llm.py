"""A minimal OpenAI-compatible endpoint that answers every chat call after a fixed delay.

asyncio, raw HTTP/1.1 with keep-alive: thousands of concurrent calls cost it
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


async def _handle(reader: asyncio.StreamReader, writer: asyncio.StreamWriter, delay: float) -> None:
    try:
        while True:
            head = await reader.readuntil(b"\r\n\r\n")
            length = 0
            for line in head.split(b"\r\n"):
                if line.lower().startswith(b"content-length:"):
                    length = int(line.split(b":", 1)[1])
            if length:
                await reader.readexactly(length)
            await asyncio.sleep(delay)
            writer.write(RESPONSE)
            await writer.drain()
    except (asyncio.IncompleteReadError, ConnectionError):
        pass
    finally:
        writer.close()


async def _serve(delay: float, ports: Any) -> None:
    server = await asyncio.start_server(
        lambda r, w: _handle(r, w, delay), "127.0.0.1", 0, backlog=1024
    )
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
