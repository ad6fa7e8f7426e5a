"""``replay view``: the results store served as pages over HTTP (standard library only).

The server answers GET and HEAD with the pages of ``_pages``. Bound to a loopback
address, it answers only requests addressed to a loopback name, so a web page cannot
read the store by pointing a name of its own at 127.0.0.1 (DNS rebinding).

It writes one thing: a label that the review queue's form (``_review``) POSTs, and
only from the server's own page. The server must be bound to a loopback address; the
request's Host must be a loopback name with the server's port and its Origin that
same origin (a page elsewhere cannot send that, nor read the queue to learn its
token); and the form must carry the server's random token, made anew each time it
starts. Anything else is refused and writes nothing; a POST elsewhere is a 501.
"""

from __future__ import annotations

import hmac
import html
import ipaddress
import logging
import re
import secrets
import socket
import sys
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs, unquote, urlsplit

from recorder import ConfigError

from ..results import DEFAULT_PATH, Store
from ._pages import render
from ._review import LABELS, StoreUnwritable, store_label, unwritable_html
from ._web import Page

_log = logging.getLogger(__name__)

_HEADERS = {
    "X-Content-Type-Options": "nosniff",
    # Not no-referrer: under it a browser sends `Origin: null` with a form's POST, and
    # the label form must show its origin. Other sites still get no referrer.
    "Referrer-Policy": "same-origin",
    # The pages are self-contained: their own inline style and script, nothing fetched.
    "Content-Security-Policy": (
        "default-src 'none'; style-src 'unsafe-inline'; script-src 'unsafe-inline'; "
        "img-src data:; form-action 'self'; frame-ancestors 'none'"
    ),
}

_FORM = "application/x-www-form-urlencoded"
_MAX_FORM = 64 * 1024
"""The largest label form taken, in bytes (a note of a few thousand characters fits)."""
_FIELDS = {"token", "case", "idx", "verdict", "note", "by"}
_REVIEW = re.compile(r"/runs/([^/]+)/review")
"""The one address that takes a POST: a run's review queue."""


def _is_loopback(host: str) -> bool:
    """Whether a host (an address, or a name as a Host header gives it) is this machine's."""
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return host == "localhost"


def _port(host: str) -> str:
    """The port a Host header names (80 when it names none)."""
    name, colon, port = host.rpartition(":")
    return port if colon and not port.endswith("]") and name else "80"


def _line(status: int, text: str) -> Page:
    """A refusal or a bad form: one line of plain text."""
    return Page(status, " ".join(text.split()) + "\n", type="text/plain; charset=utf-8")


class _Server(ThreadingHTTPServer):
    daemon_threads = True
    store_path: Path
    loopback: bool
    url: str
    token: str
    """The label forms' token: random, one per server."""

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

    def do_POST(self) -> None:
        self.close_connection = True  # a body left unread must not be read as a request
        path = urlsplit(self.path).path
        review = _REVIEW.fullmatch(path)
        if review is None:
            self._send(_line(501, f"no POST at {path}: only a run's review queue takes one"))
            return
        page = self._misdirected() or self._foreign() or self._label(unquote(review.group(1)))
        self._send(page)

    def _misdirected(self) -> Page | None:
        """A 421 when a loopback server is asked under a name that is not a loopback one."""
        name = (self.headers.get("Host") or "").lower()
        name = name.rpartition(":")[0] if not name.endswith("]") and ":" in name else name
        if self.server.loopback and not _is_loopback(name.strip("[]")):
            return Page(
                421,
                f"<p>not served to host {html.escape(repr(name))}: open "
                f"{html.escape(self.server.url)} instead</p>\n",
            )
        return None

    def _answer(self, *, body: bool) -> None:
        page = self._misdirected()
        if page is None:
            try:
                page = render(self.server.store_path, self.path, token=self.server.token)
            except Exception:
                # A bug of ours: the browser gets one line, the traceback goes to stderr.
                self._send(Page(500, "agent-replay failed on this page; see the server's log\n"))
                raise
        self._send(page, body=body)

    def _foreign(self) -> Page | None:
        """Why a POST is not from the server's own page (None: it is)."""
        if not self.server.loopback:
            return _line(403, "labels are taken only by a server bound to a loopback address")
        host = self.headers.get("Host") or ""
        port = str(self.server.server_address[1])
        if _port(host) != port:
            return _line(403, f"refused: Host {host!r} is not this server's (port {port})")
        origin = self.headers.get("Origin")
        if origin is None or origin.lower() != f"http://{host}".lower():
            said = "without an Origin" if origin is None else f"from {origin!r}"
            return _line(403, f"refused: a form {said}, not from this server's page")
        return None

    def _form(self) -> dict[str, list[str]] | Page:
        """The POSTed form's fields, or a 400 saying why it is none."""
        kind = (self.headers.get("Content-Type") or "").partition(";")[0].strip().lower()
        if kind != _FORM:
            return _line(400, f"a label is a form ({_FORM}), not {kind or 'nothing'!r}")
        size = self.headers.get("Content-Length") or ""
        if not size.isascii() or not size.isdigit() or int(size) > _MAX_FORM:
            return _line(400, f"a label form has a Content-Length of up to {_MAX_FORM} bytes")
        data = self.rfile.read(int(size))
        try:
            return parse_qs(data.decode(), keep_blank_values=True, strict_parsing=bool(data))
        except (UnicodeDecodeError, ValueError):
            return _line(400, "the label form is not URL-encoded UTF-8")

    def _label(self, run: str) -> Page:
        """Store the POSTed label (then back to the queue), or say why not."""
        form = self._form()
        if isinstance(form, Page):
            return form
        token = form.get("token", [""])
        if len(token) != 1 or not hmac.compare_digest(token[0], self.server.token):
            return _line(403, "refused: the form's token is not this server's; reload the page")
        wrong = sorted(set(form) - _FIELDS) + sorted(k for k, v in form.items() if len(v) > 1)
        if wrong:
            return _line(
                400, f"a label form has case, idx, verdict, note and by once each: {wrong}"
            )
        given = {key: values[0] for key, values in form.items()}
        case, idx, verdict = (given.get(key, "") for key in ("case", "idx", "verdict"))
        if not case or not idx.isascii() or not idx.isdigit() or verdict not in LABELS:
            return _line(400, f"a label names a case, a trial index and one of {', '.join(LABELS)}")
        note, labeller = given.get("note", ""), given.get("by", "").strip()
        if not labeller:  # (the page asks for a name; a form sent without one is refused too)
            return _line(400, "a label from the review queue says who gave it: fill in your name")
        try:
            store_label(self.server.store_path, run, case, int(idx), verdict, note, labeller)
        except StoreUnwritable as exc:
            return Page(503, unwritable_html(exc, self.path))
        except ConfigError as exc:  # no such run or trial
            return _line(400, str(exc))
        return Page(303, "", location=self.path)

    def _send(self, page: Page, *, body: bool = True) -> None:
        data = page.body.encode("utf-8")
        self.send_response(page.status)
        self.send_header("Content-Type", page.type)
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
    transcript; ``/compare/A/B`` two runs per case, newly failing cases first;
    ``/runs/NAME/review?pass=5&fail=5&seed=0`` the review queue (``replay.sample``'s
    picks, each with a form that stores a label, as ``replay label`` does). Names in
    addresses are percent-encoded. Use it as a context manager, or call ``close()``.

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
        self._httpd.token = secrets.token_urlsafe(32)
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
