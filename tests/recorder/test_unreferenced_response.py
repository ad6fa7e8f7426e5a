"""A response nobody holds (``urlopen(url).read()``) is read and recorded whole."""

from __future__ import annotations

import http.client
import http.server
import threading
import urllib.request
from collections.abc import Iterator
from pathlib import Path

import pytest

from recorder import HttpEvent, read_cassette, record

BODY = b'{"answer": 42}\n' * 100


class _Server(http.server.BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def do_GET(self) -> None:
        chunked = self.path.startswith("/chunked")
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        if chunked:
            self.send_header("Transfer-Encoding", "chunked")
        else:
            self.send_header("Content-Length", str(len(BODY)))
        self.end_headers()
        self.wfile.write(b"%x\r\n%s\r\n0\r\n\r\n" % (len(BODY), BODY) if chunked else BODY)

    def log_message(self, *args: object) -> None:
        """Quiet."""


@pytest.fixture(scope="module")
def base_url() -> Iterator[str]:
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), _Server)
    server.daemon_threads = True
    threading.Thread(target=server.serve_forever, args=(0.02,), daemon=True).start()
    yield f"http://127.0.0.1:{server.server_address[1]}"
    server.shutdown()
    server.server_close()


def _recorded(path: Path) -> list[HttpEvent]:
    return [e for e in read_cassette(path).events if isinstance(e, HttpEvent)]


@pytest.mark.parametrize("where", ["/length", "/chunked"])
def test_urlopen_read_of_a_response_nobody_holds(base_url: str, where: str, tmp_path: Path) -> None:
    with record(tmp_path / "a.cassette"):
        got = urllib.request.urlopen(base_url + where, timeout=10).read()
        line = urllib.request.urlopen(base_url + where, timeout=10).readline()
        buf = bytearray(50)
        n = urllib.request.urlopen(base_url + where, timeout=10).readinto(buf)
    assert got == BODY
    assert line == BODY.splitlines(keepends=True)[0]
    assert bytes(buf[:n]) == BODY[:n]
    first, *_ = _recorded(tmp_path / "a.cassette")
    assert first.response is not None
    assert b"".join(first.response.chunks) == BODY
    assert first.response.complete


def test_http_client_response_read_without_a_name(base_url: str, tmp_path: Path) -> None:
    host, port = base_url.removeprefix("http://").split(":")
    with record(tmp_path / "b.cassette"):
        conn = http.client.HTTPConnection(host, int(port), timeout=10)
        conn.request("GET", "/length")
        got = conn.getresponse().read()
        conn.close()
    assert got == BODY
    (event,) = _recorded(tmp_path / "b.cassette")
    assert event.response is not None and b"".join(event.response.chunks) == BODY
