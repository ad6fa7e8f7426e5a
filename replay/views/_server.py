"""``replay view``: the results store served as pages over HTTP (standard library only).

The server answers GET and HEAD with the pages of ``_pages`` and nothing else: it
never writes the store. Bound to a loopback address, it answers only requests
addressed to a loopback name, so a web page cannot read the store by pointing a
name of its own at 127.0.0.1 (DNS rebinding).
"""

from __future__ import annotations

import html
import ipaddress
import logging
import socket
import sys
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

from recorder import ConfigError

from ..results import DEFAULT_PATH, Store
from ._pages import Page, render

_log = logging.getLogger(__name__)

_HEADERS = {
    "Content-Type": "text/html; charset=utf-8",
    "X-Content-Type-Options": "nosniff",
    "Referrer-Policy": "no-referrer",
    # The pages are self-contained: their own inline style and script, nothing fetched.
    "Content-Security-Policy": (
        "default-src 'none'; style-src 'unsafe-inline'; script-src 'unsafe-inline'; "
        "img-src data:; form-action 'self'; frame-ancestors 'none'"
    ),
}


def _is_loopback(host: str) -> bool:
    """Whether a host (an address, or a name as a Host header gives it) is this machine's."""
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return host == "localhost"


class _Server(ThreadingHTTPServer):
    daemon_threads = True
    store_path: Path
    loopback: bool
    url: str

    def handle_error(self, request: Any, client_address: Any) -> None:
        if isinstance(sys.exc_info()[1], (ConnectionResetError, BrokenPipeError)):
            return  # a browser that hung up: nothing to report
        super().handle_error(request, client_address)


class _Server6(_Server):
    address_family = socket.AF_INET6


class _Handler(BaseHTTPRequestHandler):
    server_version = "agent-replay-view"
    sys_version = ""
    server: _Server

    def log_message(self, format: str, *args: Any) -> None:
        _log.debug("%s - " + format, self.address_string(), *args)

    def do_GET(self) -> None:
        self._answer(body=True)

    def do_HEAD(self) -> None:
        self._answer(body=False)

    def _answer(self, *, body: bool) -> None:
        name = (self.headers.get("Host") or "").lower()
        name = name.rpartition(":")[0] if not name.endswith("]") and ":" in name else name
        if self.server.loopback and not _is_loopback(name.strip("[]")):
            page = Page(
                421,
                f"<p>not served to host {html.escape(repr(name))}: open "
                f"{html.escape(self.server.url)} instead</p>\n",
            )
        else:
            try:
                page = render(self.server.store_path, self.path)
            except Exception:
                # A bug of ours: the browser gets one line, the traceback goes to stderr.
                self._send(Page(500, "agent-replay failed on this page; see the server's log\n"))
                raise
        self._send(page, body=body)

    def _send(self, page: Page, *, body: bool = True) -> None:
        data = page.body.encode("utf-8")
        self.send_response(page.status)
        for key, value in _HEADERS.items():
            self.send_header(key, value)
        if page.location is not None:
            self.send_header("Location", page.location)
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        if body:
            self.wfile.write(data)


class ViewServer:
    """The results store served as pages, from a background thread (``replay view``).

    Pages: ``/`` the runs, newest first, with a form to compare two; ``/runs/NAME`` a
    run's viewer page; ``/runs/NAME/trials/CASE/INDEX`` one trial's grades and
    transcript; ``/compare/A/B`` two runs per case, newly failing cases first. Names
    in addresses are percent-encoded. Use it as a context manager, or call ``close()``.

    ```python
    with replay.view(".replay/results.db") as server:
        print(server.url)  # http://127.0.0.1:PORT/
        input("press Enter to stop")
    ```

    Args:
        store: The results store (a path, or a ``Store``: only its path is used).
        host: Address to bind; a loopback one (the default) answers only loopback names.
        port: Port to bind; 0 picks a free one.

    Raises:
        ConfigError: There is no store at the path, it is not a results store, or the
            address cannot be bound.
    """

    def __init__(
        self, store: Store | str | Path = DEFAULT_PATH, *, host: str = "127.0.0.1", port: int = 0
    ) -> None:
        self.store = store.path if isinstance(store, Store) else Path(store)
        Store(self.store, read_only=True).db.conn.close()  # refuse a missing or foreign file now
        kind = _Server6 if ":" in host else _Server
        try:
            self._httpd = kind((host, port), _Handler)
        except OSError as exc:
            reason = exc.strerror or exc
            raise ConfigError(f"cannot serve on {host} port {port}: {reason}") from None
        self._httpd.store_path = self.store
        self._httpd.loopback = _is_loopback(host)
        self._httpd.url = self.url
        # serve_forever checks for shutdown() between polls: 0.1 s keeps close() quick.
        self._thread = threading.Thread(
            target=self._httpd.serve_forever, args=(0.1,), name="replay-view", daemon=True
        )
        self._thread.start()

    @property
    def url(self) -> str:
        """The run list's address, ``http://HOST:PORT/``."""
        host, port = self._httpd.server_address[:2]
        host = host.decode() if isinstance(host, bytes) else host
        shown = f"[{host}]" if ":" in host else host
        return f"http://{shown}:{port}/"

    def close(self) -> None:
        """Stop serving and free the port (waits for the serving thread)."""
        self._httpd.shutdown()
        self._httpd.server_close()
        self._thread.join()

    def __enter__(self) -> ViewServer:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()


def view(
    store: Store | str | Path = DEFAULT_PATH, *, host: str = "127.0.0.1", port: int = 0
) -> ViewServer:
    """Serve the results store as pages until closed (``replay view``); see ``ViewServer``.

    Raises:
        ConfigError: No store at the path, or the address cannot be bound.
    """
    return ViewServer(store, host=host, port=port)
