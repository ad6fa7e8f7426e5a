"""Threaded servers on 127.0.0.1 for a trial's endpoints: MCP, the LLM proxy, the user."""

from __future__ import annotations

import socket
import socketserver
import threading
from typing import Any


def serve_in_thread(server: socketserver.BaseServer, name: str) -> None:
    """Serve ``server`` in a daemon thread (``stop_serving`` ends it)."""
    threading.Thread(
        target=server.serve_forever, kwargs={"poll_interval": 0.05}, name=name, daemon=True
    ).start()


def stop_serving(server: socketserver.BaseServer) -> None:
    """Stop ``server`` in a thread of its own.

    Its loop notices at its next poll (up to 50 ms): the trial that owned it need not wait.
    """

    def stop() -> None:
        server.shutdown()
        server.server_close()

    threading.Thread(target=stop, name="replay-stop", daemon=True).start()


class LoopbackServer(socketserver.ThreadingTCPServer):
    """A threaded TCP server for the trial's endpoints on 127.0.0.1 (the LLM proxy's too)."""

    daemon_threads = True
    allow_reuse_address = True

    def handle_error(self, request: Any, client_address: Any) -> None:
        """A client that went away mid-answer: nobody to tell (and no traceback to print)."""

    def server_bind(self) -> None:
        # Small answers on a kept-open connection: without this, delayed ACKs cost
        # ~40 ms a call (accepted connections inherit it on Linux).
        self.socket.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        super().server_bind()
