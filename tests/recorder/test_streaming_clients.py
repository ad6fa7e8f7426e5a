"""Streaming fidelity, client by client: chunks reach the agent as they arrive while recording
(each before the server sends the next: lock-step, no clock), are recorded as they arrived,
and are replayed one by one, in order."""

from __future__ import annotations

import asyncio
import gc
import gzip
import http.client
import http.server
import threading
import urllib.request
import weakref
from collections.abc import AsyncIterable, AsyncIterator, Callable, Iterable, Iterator
from pathlib import Path
from urllib.parse import parse_qs, urlsplit

import aiohttp
import httpx
import pytest
import requests
import urllib3

from recorder import (
    Hooks,
    HttpEvent,
    HttpResponse,
    SandboxViolation,
    WarningEvent,
    playback,
    read_cassette,
    record,
    unrecorded,
)
from replay.stub_llm import EchoPolicy, StubLLM

CHUNKS = [f"data: chunk {n:02}\n\n".encode() for n in range(5)]
SIZE = len(CHUNKS[0])  # all the same size: read(SIZE) gets one chunk as it arrives
LOCKSTEP_GUARD_S = 60.0
"""A hang guard only: how long the server waits for the agent to have had a chunk."""

Taken = list[bytes]
"""The chunks the agent got, in order."""

_HAD: dict[str, threading.Semaphore] = {}  # per lock-step request: chunks the agent had
_HELD_BACK: set[str] = set()  # lock-step requests whose chunk the agent never had in time


def _had(lock: str) -> threading.Semaphore:
    return _HAD.setdefault(lock, threading.Semaphore(0))


class _Streamer(http.server.BaseHTTPRequestHandler):
    """``/chunked``: CHUNKS as HTTP chunks; ``/length``: the same with a content-length.

    With ``lock=ID`` in the query, lock-step: each chunk is sent only once the agent
    has had the one before (``_taken`` says so), so a client or recorder that held
    chunks back until more came would never get the next: the request is then
    marked held back (``_HELD_BACK``) after ``LOCKSTEP_GUARD_S`` and the rest sent.
    """

    protocol_version = "HTTP/1.1"
    disable_nagle_algorithm = True  # else Nagle and delayed ACKs add ~44 ms per chunk

    def do_GET(self) -> None:
        chunked = self.path.startswith("/chunked")
        lock = parse_qs(urlsplit(self.path).query).get("lock", [None])[0]
        self.send_response(200)
        self.send_header("Content-Type", "text/event-stream")
        if chunked:
            self.send_header("Transfer-Encoding", "chunked")
        else:
            self.send_header("Content-Length", str(sum(map(len, CHUNKS))))
        self.end_headers()
        try:
            for n, chunk in enumerate(CHUNKS):
                if n and lock is not None and not _had(lock).acquire(timeout=LOCKSTEP_GUARD_S):
                    _HELD_BACK.add(lock)
                self.wfile.write(b"%x\r\n%s\r\n" % (len(chunk), chunk) if chunked else chunk)
                self.wfile.flush()
            if chunked:
                self.wfile.write(b"0\r\n\r\n")
                self.wfile.flush()
        except (BrokenPipeError, ConnectionResetError):  # a client that stopped reading
            self.close_connection = True

    def log_message(self, *args: object) -> None:
        """Quiet."""


@pytest.fixture(scope="module")
def base_url() -> Iterator[str]:
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), _Streamer)
    server.daemon_threads = True
    threading.Thread(target=server.serve_forever, args=(0.02,), daemon=True).start()
    yield f"http://127.0.0.1:{server.server_address[1]}"
    server.shutdown()
    server.server_close()


def _taken(chunks: Iterable[bytes], url: str) -> Taken:
    """The chunks as the agent gets them, each told to a lock-step server as it comes."""
    lock = parse_qs(urlsplit(url).query).get("lock", [None])[0]
    out = []
    for chunk in chunks:
        if chunk:
            out.append(chunk)
            if lock is not None:
                _had(lock).release()
    return out


async def _had_each(chunks: AsyncIterable[bytes], url: str) -> AsyncIterator[bytes]:
    """``_taken`` for an async client: each chunk told as it comes, not once all did."""
    async for chunk in chunks:
        yield _taken([chunk], url)[0] if chunk else chunk


def via_requests(url: str) -> Taken:
    with requests.Session() as session:
        with session.get(url, stream=True) as response:
            return _taken(response.iter_content(chunk_size=SIZE), url)


def via_requests_any(url: str) -> Taken:
    """``chunk_size=None``: whatever arrived (an HTTP chunk; a non-chunked body: all of it)."""
    with requests.Session() as session:
        with session.get(url, stream=True) as response:
            return _taken(response.iter_content(chunk_size=None), url)


def via_urlopen(url: str) -> Taken:
    with urllib.request.urlopen(url, timeout=10) as response:
        return _taken(iter(lambda: response.read(SIZE), b""), url)


def via_requests_lines(url: str) -> Taken:
    with requests.Session() as session:
        with session.get(url, stream=True) as response:
            return _taken(response.iter_lines(), url)


def via_urllib3_stream(url: str) -> Taken:
    with urllib3.PoolManager() as pool:
        response = pool.request("GET", url, preload_content=False)
        taken = _taken(response.stream(SIZE), url)
        response.release_conn()
        return taken


def via_urllib3_read(url: str) -> Taken:
    with urllib3.PoolManager() as pool:
        response = pool.request("GET", url, preload_content=False)
        taken = _taken(iter(lambda: response.read(SIZE), b""), url)
        response.release_conn()
        return taken


def _http_client(url: str, read: Callable[[http.client.HTTPResponse], bytes]) -> Taken:
    host, port = url.split("/")[2].split(":")
    conn = http.client.HTTPConnection(host, int(port), timeout=10)
    try:
        conn.request("GET", "/" + url.split("/", 3)[3])
        response = conn.getresponse()
        return _taken(iter(lambda: read(response), b""), url)
    finally:
        conn.close()


def via_http_client_read(url: str) -> Taken:
    return _http_client(url, lambda r: r.read(SIZE))


def via_http_client_read1(url: str) -> Taken:
    return _http_client(url, lambda r: r.read1(65536))


def via_aiohttp(url: str) -> Taken:
    async def agent() -> Taken:
        async with aiohttp.ClientSession() as session:
            async with session.get(url) as response:
                return _taken(
                    [c async for c in _had_each(response.content.iter_any(), url)], url=""
                )

    return asyncio.run(agent())


def via_aiohttp_lines(url: str) -> Taken:
    async def agent() -> Taken:
        async with aiohttp.ClientSession() as session:
            async with session.get(url) as response:
                return [line async for line in _had_each(response.content, url) if line]

    return asyncio.run(agent())


def via_httpx(url: str) -> Taken:
    with httpx.Client() as client:
        with client.stream("GET", url) as response:
            return _taken(response.iter_raw(), url)


AGENTS = [
    via_requests,
    via_urllib3_stream,
    via_urllib3_read,
    via_http_client_read,
    via_http_client_read1,
    via_urlopen,
    via_aiohttp,
    via_httpx,
]
PATHS = ["/chunked", "/length"]
CASES = [
    *((agent, path) for agent in AGENTS for path in PATHS),
    (via_requests_any, "/chunked"),
]


@pytest.mark.slow
@pytest.mark.parametrize(
    ("agent", "path"), CASES, ids=[f"{a.__name__.removeprefix('via_')}-{p[1:]}" for a, p in CASES]
)
def test_chunks_arrive_as_live_are_recorded_as_they_came_and_replay_in_order(
    tmp_path: Path, base_url: str, agent: Callable[[str], Taken], path: str
) -> None:
    """Lock-step: the server sends each chunk once the agent had the one before."""
    url = f"{base_url}{path}?{agent.__name__}&lock="
    recorded_at = tmp_path / "recorded.cassette"
    live = agent(url + f"live-{tmp_path.name}")
    with record(recorded_at):
        recorded = agent(url + f"recorded-{tmp_path.name}")
    assert b"".join(live) == b"".join(CHUNKS)
    # As they arrive: each reached the agent before the server sent the next.
    assert not {f"live-{tmp_path.name}", f"recorded-{tmp_path.name}"} & _HELD_BACK
    assert recorded == live
    (event,) = [e for e in read_cassette(recorded_at).events if isinstance(e, HttpEvent)]
    assert event.response is not None and event.response.complete
    assert event.response.chunks == live  # recorded as the chunks that arrived
    with playback(recorded_at):
        replayed = agent(url + f"recorded-{tmp_path.name}")
    assert replayed == live  # one by one, in order


@pytest.mark.parametrize(
    "agent", [via_requests_lines, via_aiohttp_lines], ids=["requests", "aiohttp"]
)
def test_lines_of_a_stream_replay_as_they_were_read(
    tmp_path: Path, base_url: str, agent: Callable[[str], Taken]
) -> None:
    url = base_url + "/chunked"
    with record(tmp_path / "lines.cassette"):
        live = agent(url)
    (event,) = [
        e for e in read_cassette(tmp_path / "lines.cassette").events if isinstance(e, HttpEvent)
    ]
    assert event.response is not None and event.response.chunks == CHUNKS  # as sent
    with playback(tmp_path / "lines.cassette"):
        assert agent(url) == live
    assert [line.strip() for line in live if line.strip()] == [c.strip() for c in CHUNKS]


class _Shapes(http.server.BaseHTTPRequestHandler):
    """Bodies of other shapes: gzipped, cut short, none (HEAD, 204)."""

    protocol_version = "HTTP/1.1"
    disable_nagle_algorithm = True
    connections = 0

    def setup(self) -> None:
        super().setup()
        _Shapes.connections += 1

    def do_GET(self) -> None:
        if self.path == "/gzip":
            body = gzip.compress(b'{"zipped": true}', mtime=0)
            self.send_response(200)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Encoding", "gzip")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)
        elif self.path == "/cut":
            self.send_response(200)
            self.send_header("Content-Length", "100")
            self.end_headers()
            self.wfile.write(b"first part")
            self.wfile.flush()
            self.close_connection = True
        elif self.path == "/empty":
            self.send_response(204)
            self.end_headers()
        else:
            self.send_response(200)
            self.send_header("Content-Type", "text/plain")
            self.send_header("Content-Length", "2")
            self.end_headers()
            self.wfile.write(b"ok")

    def do_HEAD(self) -> None:
        self.send_response(200)
        self.send_header("Content-Length", "1234")
        self.end_headers()

    def log_message(self, *args: object) -> None:
        """Quiet."""


@pytest.fixture
def shapes() -> Iterator[str]:
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), _Shapes)
    server.daemon_threads = True
    threading.Thread(target=server.serve_forever, args=(0.02,), daemon=True).start()
    yield f"http://127.0.0.1:{server.server_address[1]}"
    server.shutdown()
    server.server_close()


def _events(path: Path) -> list[HttpEvent]:
    return [e for e in read_cassette(path).events if isinstance(e, HttpEvent)]


def test_a_gzipped_body_is_recorded_as_sent_and_decoded_by_the_client_again(
    cassette_path: Path, shapes: str
) -> None:
    def agent() -> list[object]:
        with urllib3.PoolManager() as pool:
            raw = pool.request("GET", shapes + "/gzip", decode_content=False).data
            decoded = pool.request("GET", shapes + "/gzip").json()
        return [gzip.decompress(raw), decoded, requests.get(shapes + "/gzip").json()]

    with record(cassette_path):
        live = agent()
    assert live == [b'{"zipped": true}', {"zipped": True}, {"zipped": True}]
    for event in _events(cassette_path):  # the bytes as sent, under their own headers
        assert event.response is not None and ("content-encoding", "gzip") in event.response.headers
        assert gzip.decompress(b"".join(event.response.chunks)) == b'{"zipped": true}'
    with playback(cassette_path):
        assert agent() == live


def test_a_cut_body_and_bodiless_responses_replay_as_they_were(
    cassette_path: Path, shapes: str
) -> None:
    def agent() -> list[object]:
        seen: list[object] = []
        with requests.Session() as session:
            try:
                session.get(shapes + "/cut")
            except requests.exceptions.ChunkedEncodingError as exc:
                seen.append(type(exc).__name__)
            head = session.head(shapes + "/")
            seen += [head.status_code, head.headers["Content-Length"], head.content]
            empty = session.get(shapes + "/empty")
            seen += [empty.status_code, empty.content, session.get(shapes + "/").text]
        host, port = shapes.split("/")[2].split(":")
        conn = http.client.HTTPConnection(host, int(port), timeout=10)
        conn.request("GET", "/cut")
        response = conn.getresponse()
        try:
            response.read()
        except http.client.IncompleteRead as exc:
            seen += [type(exc).__name__, exc.partial]
        conn.close()
        return seen

    with record(cassette_path):
        live = agent()
    assert live == ["ChunkedEncodingError", 200, "1234", b"", 204, b"", "ok", *live[7:]]
    assert live[7:] == ["IncompleteRead", b"first part"]
    events = _events(cassette_path)
    cut = events[0].response
    assert cut is not None and cut.chunks == [b"first part"] and not cut.complete
    assert events[0].error is not None and events[-1].error is not None
    assert all(e.response is not None and e.response.complete for e in events[1:4])
    with playback(cassette_path):
        assert agent() == live


def test_one_connection_serves_many_exchanges_recorded_and_replayed(
    cassette_path: Path, shapes: str
) -> None:
    host, port = shapes.split("/")[2].split(":")

    def agent() -> list[bytes]:
        conn = http.client.HTTPConnection(host, int(port), timeout=10)
        out = []
        for _ in range(3):
            conn.request("GET", "/")
            out.append(conn.getresponse().read())
        conn.close()
        with requests.Session() as session:
            out += [session.get(shapes + "/").content for _ in range(3)]
        return out

    opened = _Shapes.connections
    with record(cassette_path):
        assert agent() == [b"ok"] * 6
    assert len(_events(cassette_path)) == 6
    assert _Shapes.connections - opened == 2  # one per client, kept alive
    with playback(cassette_path):
        assert agent() == [b"ok"] * 6
    assert _Shapes.connections - opened == 2


def test_local_answers_through_requests(tmp_path: Path, shapes: str) -> None:
    """A sandbox refusal, a frozen LLM, an injected fault and ignored hosts, never sent."""
    first, frozen = tmp_path / "first.cassette", tmp_path / "frozen.cassette"
    with record(first):
        live = requests.get(shapes + "/").text
    with record(tmp_path / "sandbox.cassette", hooks=Hooks(allowed_hosts=["llm.internal"])):
        with pytest.raises(SandboxViolation):
            requests.get(shapes + "/")
    (refused,) = _events(tmp_path / "sandbox.cassette")
    assert refused.error is not None and refused.error.type.endswith("SandboxViolation")
    with record(frozen, hooks=Hooks(source=playback(first))):
        assert requests.get(shapes + "/").text == live
    (again,) = _events(frozen)
    assert again.response is not None and again.response.chunks == [b"ok"]
    fault = HttpResponse(status=503, headers=[("content-type", "text/plain")], chunks=[b"no"])
    with record(tmp_path / "fault.cassette", hooks=Hooks(interpose=lambda request: fault)):
        response = requests.get(shapes + "/")
        assert (response.status_code, response.text) == (503, "no")
    local = HttpResponse(status=200, headers=[], chunks=[b"{}"])
    with record(tmp_path / "ignored.cassette") as rec:
        rec.ignored = lambda url: True  # type: ignore[method-assign]
        assert requests.get(shapes + "/").text == "ok"  # live, not recorded
        rec.ignored = lambda url: local  # type: ignore[method-assign]
        assert requests.get(shapes + "/").text == "{}"
    assert _events(tmp_path / "ignored.cassette") == []
    with playback(first) as player:
        player.ignored = lambda url: local  # type: ignore[method-assign]
        assert requests.get(shapes + "/nowhere").text == "{}"
    assert player.misses == []


def test_a_recorded_response_is_freed_when_dropped_and_a_dropped_body_keeps_what_came(
    cassette_path: Path, base_url: str
) -> None:
    # The tee holds responses weakly: no cycle left for the garbage collector, whose
    # finalizers may run anywhere (even where the recording holds its lock).
    gc.disable()
    try:
        with record(cassette_path), urllib3.PoolManager() as pool:
            whole = pool.request("GET", base_url + "/chunked", preload_content=False)
            assert whole.read() == b"".join(CHUNKS)
            freed = weakref.ref(whole)
            del whole
            assert freed() is None
            dropped = pool.request("GET", base_url + "/chunked", preload_content=False)
            assert next(dropped.stream()) == CHUNKS[0]
            gone = weakref.ref(dropped)
            del dropped  # mid-body, never closed: its finalizer closes it
            assert gone() is None
            assert len(_events(cassette_path)) == 1  # the dropped one: at the end
    finally:
        gc.enable()
    cassette = read_cassette(cassette_path)
    first, second = (e for e in cassette.events if isinstance(e, HttpEvent))
    assert first.response is not None and first.response.complete
    assert second.response is not None and not second.response.complete
    assert second.response.chunks == [CHUNKS[0]]
    assert any(
        "neither read to its end nor closed" in getattr(e, "message", "") for e in cassette.events
    )


def test_vcrpys_other_stubs_honour_ignored_hosts(tmp_path: Path, shapes: str) -> None:
    """The bridge vcrpy's remaining stubs (tornado's) call asks the session about hosts too."""
    httpclient = pytest.importorskip("tornado.httpclient")

    def fetch(url: str) -> tuple[int, bytes]:
        async def go() -> tuple[int, bytes]:
            client = httpclient.AsyncHTTPClient(force_instance=True)
            try:
                response = await client.fetch(url, raise_error=False)
            finally:
                client.close()
            return response.code, response.body

        return asyncio.run(go())

    local = HttpResponse(status=202, headers=[("content-type", "text/plain")], chunks=[b"here"])
    path = tmp_path / "tornado.cassette"
    with record(path) as rec:
        rec.ignored = lambda url: True  # type: ignore[method-assign]
        assert fetch(shapes + "/") == (200, b"ok")
        rec.ignored = lambda url: local  # type: ignore[method-assign]
        assert fetch(shapes + "/") == (202, b"here")
        rec.ignored = lambda url: False  # type: ignore[method-assign]
        assert fetch(shapes + "/") == (200, b"ok")
    (event,) = _events(path)  # only the last, not ignored
    assert event.response is not None and event.response.chunks == [b"ok"]
    with playback(path) as player:
        assert fetch(shapes + "/") == (200, b"ok")  # from the cassette
        player.ignored = lambda url: True  # type: ignore[method-assign]
        assert fetch(shapes + "/elsewhere") == (200, b"ok")  # live: an ignored host
        player.ignored = lambda url: local  # type: ignore[method-assign]
        assert fetch(shapes + "/nowhere") == (202, b"here")
    assert player.misses == []


class _Proxy(http.server.BaseHTTPRequestHandler):
    """A forwarding HTTP proxy (absolute-form requests), streaming what it gets as it gets it."""

    protocol_version = "HTTP/1.1"
    disable_nagle_algorithm = True

    def do_GET(self) -> None:
        with unrecorded():  # the proxy's own client is not the agent's
            target = urllib3.util.parse_url(self.path)
            upstream = http.client.HTTPConnection(target.host or "", target.port, timeout=10)
            upstream.request("GET", target.request_uri)
            response = upstream.getresponse()
            self.send_response(response.status)
            self.send_header("Transfer-Encoding", "chunked")
            self.end_headers()
            while chunk := response.read1(65536):
                self.wfile.write(b"%x\r\n%s\r\n" % (len(chunk), chunk))
                self.wfile.flush()
            self.wfile.write(b"0\r\n\r\n")
            upstream.close()

    def log_message(self, *args: object) -> None:
        """Quiet."""


def test_a_stream_through_a_proxy(cassette_path: Path, base_url: str) -> None:
    proxy = http.server.ThreadingHTTPServer(("127.0.0.1", 0), _Proxy)
    proxy.daemon_threads = True
    threading.Thread(target=proxy.serve_forever, args=(0.02,), daemon=True).start()
    proxies = {"http": f"http://127.0.0.1:{proxy.server_address[1]}"}

    def agent() -> list[bytes]:
        with requests.get(base_url + "/chunked", proxies=proxies, stream=True) as response:
            return list(response.iter_content(chunk_size=None))

    try:
        with record(cassette_path):
            live = agent()
        with playback(cassette_path):
            assert agent() == live
    finally:
        proxy.shutdown()
        proxy.server_close()
    assert live == CHUNKS
    (event,) = _events(cassette_path)
    assert event.request.url == base_url + "/chunked"
    assert event.response is not None and event.response.chunks == CHUNKS


def test_a_stream_read_to_its_end_event_and_left_open_is_not_warned_of(
    cassette_path: Path,
) -> None:
    """requests' ``iter_lines`` to ``data: [DONE]``, the response never closed: whole."""
    body = {"model": "m", "stream": True, "messages": [{"role": "user", "content": "hi"}]}
    kept = []
    with StubLLM(EchoPolicy()) as llm, record(cassette_path):
        for _ in range(3):
            response = requests.post(
                f"{llm.openai_base_url}/chat/completions", json=body, stream=True
            )
            for line in response.iter_lines():
                if line == b"data: [DONE]":
                    break
            kept.append(response)  # read to its end event, neither drained nor closed
    cassette = read_cassette(cassette_path)
    calls = [e for e in cassette.events if isinstance(e, HttpEvent)]
    assert len(calls) == 3 and all(c.response is not None and c.response.complete for c in calls)
    assert not [e for e in cassette.events if isinstance(e, WarningEvent)]
