"""A walled agent reaches its trial's endpoints (tools, user) on connections kept open.

``replay.agents._post``: one connection per thread and endpoint for the whole trial, a
closed or long-idle one replaced before it is used, an error status raised as ``urlopen``
raises it. Checked against a real HTTP/1.1 server that counts its connections.
"""

from __future__ import annotations

import http.server
import threading
import urllib.error
from collections.abc import Iterator
from typing import Any

import pytest

from replay.agents import _post


class _Echo(http.server.BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    server: Any

    def setup(self) -> None:
        super().setup()
        self.server.connections += 1

    def do_POST(self) -> None:
        body = self.rfile.read(int(self.headers["Content-Length"]))
        status = 418 if body == b"teapot" else 200
        self.send_response(status)
        self.send_header("Content-Length", str(len(body)))
        if body == b"last":
            self.send_header("Connection", "close")
            self.close_connection = True
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, format: str, *args: Any) -> None:
        pass


@pytest.fixture
def server() -> Iterator[Any]:
    httpd = http.server.ThreadingHTTPServer(("127.0.0.1", 0), _Echo)
    httpd.daemon_threads = True
    httpd.connections = 0  # type: ignore[attr-defined]
    threading.Thread(target=httpd.serve_forever, daemon=True).start()
    yield httpd
    httpd.shutdown()
    httpd.server_close()


def _url(server: Any) -> str:
    return f"http://127.0.0.1:{server.server_address[1]}/mcp"


def test_calls_share_one_connection_and_a_closed_one_is_replaced(server: Any) -> None:
    url = _url(server)
    assert [_post.post(url, f"call {n}".encode(), {}) for n in range(5)] == [
        f"call {n}".encode() for n in range(5)
    ]
    assert server.connections == 1
    assert _post.post(url, b"last", {}) == b"last"  # the server closes this one
    assert _post.post(url, b"again", {}) == b"again"
    assert server.connections == 2


def test_a_long_idle_connection_is_not_used_again(
    server: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    url = _url(server)
    monkeypatch.setattr(_post, "REUSE_S", 0.0)
    for n in range(3):
        assert _post.post(url, f"call {n}".encode(), {}) == f"call {n}".encode()
    assert server.connections == 3


def test_an_error_status_is_raised_as_urlopen_raises_it_and_the_next_call_works(
    server: Any,
) -> None:
    url = _url(server)
    with pytest.raises(urllib.error.HTTPError) as raised:
        _post.post(url, b"teapot", {})
    assert raised.value.code == 418 and raised.value.read() == b"teapot"
    assert _post.post(url, b"fine", {}) == b"fine"
