"""aiohttp at its own seam: bodies of every kind, streams chunk by chunk, errors, sandbox."""

from __future__ import annotations

import asyncio
import gzip
import http.server
import json
import threading
from collections.abc import AsyncIterator, Awaitable, Callable, Iterator
from pathlib import Path
from typing import Any, TypeVar

import aiohttp
import pytest

from recorder import (
    FixtureUnsupported,
    Hooks,
    HttpEvent,
    HttpRequest,
    HttpResponse,
    SandboxViolation,
    WarningEvent,
    playback,
    read_cassette,
    record,
)
from replay.stub_llm import StubLLM

T = TypeVar("T")
LINES = [f"data: {n}\n\n".encode() for n in range(6)]


class _Handler(http.server.BaseHTTPRequestHandler):
    """``/echo`` returns the request; ``/sse`` streams LINES; ``/cut`` dies mid-body."""

    protocol_version = "HTTP/1.1"
    disable_nagle_algorithm = True
    server: _Server

    def do_GET(self) -> None:
        self._route()

    def do_POST(self) -> None:
        self._route()

    def do_HEAD(self) -> None:
        self._send(200, b"", "text/plain", head=True)

    def _route(self) -> None:
        length = int(self.headers.get("Content-Length") or 0)
        body = self.rfile.read(length) if length else self._chunked_body()
        path = self.path.split("?", 1)[0]
        self.server.seen.append((self.command, self.path, body))
        if path == "/echo":
            echoed = {
                "method": self.command,
                "path": self.path,
                "body": body.decode(),
                "content_type": self.headers.get("Content-Type"),
            }
            self._send(200, json.dumps(echoed).encode(), "application/json")
        elif path == "/sse":
            self.send_response(200)
            self.send_header("Content-Type", "text/event-stream")
            self.send_header("Transfer-Encoding", "chunked")
            self.end_headers()
            for line in LINES:
                self.wfile.write(b"%x\r\n%s\r\n" % (len(line), line))
                self.wfile.flush()
                self.server.pause.wait(0.02)
            self.wfile.write(b"0\r\n\r\n")
        elif path == "/gzip":
            self._send(200, gzip.compress(b'{"zipped": true}'), "application/json", "gzip")
        elif path == "/cut":
            self.send_response(200)
            self.send_header("Content-Length", "100")
            self.end_headers()
            self.wfile.write(b"first part")
            self.wfile.flush()
            self.close_connection = True
        elif path == "/moved":
            self.send_response(302)
            self.send_header("Location", "/echo?from=moved")
            self.send_header("Content-Length", "0")
            self.end_headers()
        elif path == "/teapot":
            self._send(418, b'{"error": "teapot"}', "application/json")
        else:
            self._send(404, b"no such path", "text/plain")

    def _chunked_body(self) -> bytes:
        if "chunked" not in self.headers.get("Transfer-Encoding", ""):
            return b""
        parts = []
        while size := int(self.rfile.readline().strip(), 16):
            parts.append(self.rfile.read(size))
            self.rfile.readline()
        self.rfile.readline()
        return b"".join(parts)

    def _send(
        self, status: int, data: bytes, ctype: str, encoding: str = "", head: bool = False
    ) -> None:
        self.send_response(status)
        self.send_header("Content-Type", ctype)
        self.send_header("Content-Length", str(len(data)))
        if encoding:
            self.send_header("Content-Encoding", encoding)
        self.end_headers()
        if not head:
            self.wfile.write(data)

    def log_message(self, *args: object) -> None:
        """Quiet."""


class _Server(http.server.ThreadingHTTPServer):
    daemon_threads = True

    def __init__(self) -> None:
        super().__init__(("127.0.0.1", 0), _Handler)
        self.seen: list[tuple[str, str, bytes]] = []
        self.pause = threading.Event()  # never set: a sleep the server can cut short

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.server_address[1]}"


@pytest.fixture
def server() -> Iterator[_Server]:
    srv = _Server()
    threading.Thread(target=srv.serve_forever, args=(0.02,), daemon=True).start()
    yield srv
    srv.shutdown()
    srv.server_close()


def run(agent: Callable[[aiohttp.ClientSession], Awaitable[T]]) -> T:
    async def main() -> T:
        async with aiohttp.ClientSession() as session:
            return await agent(session)

    return asyncio.run(main())


def fetch(
    method: str, url: str, **kwargs: Any
) -> Callable[[aiohttp.ClientSession], Awaitable[bytes]]:
    async def agent(session: aiohttp.ClientSession) -> bytes:
        async with session.request(method, url, **kwargs) as r:
            return await r.read()

    return agent


def http_events(path: Path) -> list[HttpEvent]:
    return [e for e in read_cassette(path).events if isinstance(e, HttpEvent)]


def test_json_body_is_recorded_and_replayed(cassette_path: Path) -> None:
    body = {"model": "a", "messages": [{"role": "user", "content": "via aiohttp"}]}

    async def agent(session: aiohttp.ClientSession) -> Any:
        async with session.post(url, json=body, headers={"Authorization": "Bearer sk-1"}) as r:
            r.raise_for_status()
            return await r.json()

    with StubLLM() as llm:
        url = llm.openai_base_url + "/chat/completions"
        with record(cassette_path):
            live = run(agent)
        assert len(llm.requests) == 1
        with playback(cassette_path):
            replayed = run(agent)
        assert len(llm.requests) == 1  # answered from the cassette
    assert replayed == live and live["choices"][0]["message"]["content"] == "echo: via aiohttp"
    (event,) = http_events(cassette_path)
    assert event.via == "aiohttp" and json.loads(event.request.body) == body
    assert event.request.url == url and event.response is not None
    assert dict(event.request.headers)["authorization"] != "Bearer sk-1"  # redacted
    assert event.response.status == 200 and event.response.complete


async def _chunks() -> AsyncIterator[bytes]:
    for part in (b"streamed ", b"upload"):
        yield part


@pytest.mark.parametrize(
    ("data", "sent"),
    [
        (b"raw bytes", b"raw bytes"),
        ("some text", b"some text"),
        ({"a": "1", "b": "two words"}, b"a=1&b=two+words"),
        (_chunks, b"streamed upload"),
    ],
    ids=["bytes", "str", "form", "async-generator"],
)
def test_data_bodies_reach_the_server_and_the_cassette(
    cassette_path: Path, server: _Server, data: Any, sent: bytes
) -> None:
    async def agent(session: aiohttp.ClientSession) -> Any:
        payload = data() if callable(data) else data
        async with session.post(server.url + "/echo?q=1", data=payload) as r:
            return await r.json()

    with record(cassette_path):
        live = run(agent)
    assert server.seen == [("POST", "/echo?q=1", sent)] and live["body"] == sent.decode()
    (event,) = http_events(cassette_path)
    assert event.request.body == sent and event.request.url == server.url + "/echo?q=1"
    with playback(cassette_path):
        assert run(agent) == live
    assert len(server.seen) == 1


def test_a_stream_is_recorded_and_replayed_chunk_by_chunk(
    cassette_path: Path, server: _Server
) -> None:
    async def lines(session: aiohttp.ClientSession) -> list[bytes]:
        async with session.get(server.url + "/sse") as r:
            return [line async for line in r.content]

    async def chunked(session: aiohttp.ClientSession) -> list[bytes]:
        async with session.get(server.url + "/sse") as r:
            return [chunk async for chunk in r.content.iter_chunked(4)]

    async def http_chunks(session: aiohttp.ClientSession) -> list[tuple[bytes, bool]]:
        async with session.get(server.url + "/sse") as r:
            return [pair async for pair in r.content.iter_chunks()]

    with record(cassette_path):
        live = (run(lines), run(chunked), run(http_chunks))
    events = http_events(cassette_path)
    for event in events:
        assert event.response is not None and event.response.chunks == LINES
    with playback(cassette_path):
        replayed = (run(lines), run(chunked), run(http_chunks))
    assert replayed == live
    assert live[0] == [b"data: 0\n", b"\n", b"data: 1\n", b"\n", *live[0][4:]]
    assert [data for data, end in live[2] if data and end] == LINES


def test_a_gzipped_body_is_recorded_as_aiohttp_gave_it(
    cassette_path: Path, server: _Server
) -> None:
    async def agent(session: aiohttp.ClientSession) -> Any:
        async with session.get(server.url + "/gzip") as r:
            return await r.json()

    with record(cassette_path):
        assert run(agent) == {"zipped": True}
    (event,) = http_events(cassette_path)
    assert event.response is not None and event.response.chunks == [b'{"zipped": true}']
    assert "content-encoding" not in dict(event.response.headers)
    with playback(cassette_path):
        assert run(agent) == {"zipped": True}


def test_redirects_status_errors_and_head_replay(cassette_path: Path, server: _Server) -> None:
    async def agent(session: aiohttp.ClientSession) -> list[Any]:
        out: list[Any] = []
        async with session.get(server.url + "/moved") as r:
            out += [r.status, str(r.url), len(r.history), (await r.json())["path"]]
        async with session.head(server.url + "/echo") as r:
            out += [r.status, r.headers["Content-Length"], await r.read()]
        r = await session.get(server.url + "/teapot")
        with pytest.raises(aiohttp.ClientResponseError) as info:
            r.raise_for_status()
        out += [info.value.status, info.value.message]
        with pytest.raises(aiohttp.ClientResponseError):
            await session.get(server.url + "/teapot", raise_for_status=True)
        return out

    with record(cassette_path):
        live = run(agent)
    redirected = [200, server.url + "/echo?from=moved", 1, "/echo?from=moved"]
    assert live == [*redirected, 200, "0", b"", 418, "I'm a Teapot"]
    urls = [e.request.url.removeprefix(server.url) for e in http_events(cassette_path)]
    assert urls == ["/moved", "/echo?from=moved", "/echo", "/teapot", "/teapot"]
    seen = len(server.seen)
    with playback(cassette_path):
        assert run(agent) == live
    assert len(server.seen) == seen


def test_transport_errors_are_recorded_and_raised_again(
    cassette_path: Path, server: _Server
) -> None:
    async def agent(session: aiohttp.ClientSession) -> list[str]:
        seen = []
        try:
            await session.get("http://127.0.0.1:1/refused")
        except aiohttp.ClientConnectorError as exc:
            seen += [type(exc).__name__, str(exc)]
        async with session.get(server.url + "/cut") as r:
            try:
                async for chunk in r.content.iter_any():
                    seen.append(chunk.decode())
            except aiohttp.ClientPayloadError as exc:
                seen.append(type(exc).__name__)
        return seen

    with record(cassette_path):
        live = run(agent)
    assert live[0] == "ClientConnectorError" and "Cannot connect to host" in live[1]
    assert live[2:] == ["first part", "ClientPayloadError"]
    refused, cut = http_events(cassette_path)
    assert refused.response is None and refused.error is not None
    assert cut.response is not None and cut.response.chunks == [b"first part"]
    assert not cut.response.complete and cut.error is not None
    with playback(cassette_path):
        assert run(agent) == live


def test_playback_misses_raise_and_never_reach_the_network(
    cassette_path: Path, server: _Server
) -> None:
    with record(cassette_path):
        run(fetch("POST", server.url + "/echo", json={"n": 1}))
    with playback(cassette_path) as player:
        with pytest.raises(FixtureUnsupported, match="via aiohttp"):
            run(fetch("POST", server.url + "/echo", json={"n": 2}))
    assert len(player.misses) == 1 and len(server.seen) == 1


def test_the_sandbox_refuses_other_hosts(cassette_path: Path, server: _Server) -> None:
    with record(cassette_path, hooks=Hooks(allowed_hosts=["llm.internal"])):
        with pytest.raises(SandboxViolation, match="not an allowed endpoint"):
            run(fetch("GET", server.url + "/echo"))
    assert server.seen == []
    (event,) = http_events(cassette_path)
    assert event.response is None and event.error is not None
    assert event.error.type.endswith("SandboxViolation")


def test_a_frozen_llm_answers_from_its_cassette_and_is_recorded_anew(
    tmp_path: Path, server: _Server
) -> None:
    async def agent(session: aiohttp.ClientSession) -> list[Any]:
        async with session.post(server.url + "/echo", json={"q": "frozen"}) as r:
            answer = await r.json()
        async with session.get(server.url + "/sse") as r:
            lines = [line async for line in r.content]
        return [answer, lines]

    first, second = tmp_path / "first.cassette", tmp_path / "second.cassette"
    with record(first):
        live = run(agent)
    server.shutdown()  # nothing may reach it now
    with record(second, hooks=Hooks(source=playback(first))):
        frozen = run(agent)
    assert frozen == live and len(server.seen) == 2
    again = http_events(second)
    assert [e.via for e in again] == ["aiohttp", "aiohttp"]
    assert again[1].response is not None and again[1].response.chunks == LINES
    assert [e.request.url for e in again] == [e.request.url for e in http_events(first)]


def test_interpose_answers_locally_and_is_recorded(cassette_path: Path, server: _Server) -> None:
    def fault(request: HttpRequest) -> HttpResponse | None:
        return HttpResponse(status=503, headers=[("content-type", "text/plain")], chunks=[b"down"])

    async def agent(session: aiohttp.ClientSession) -> tuple[int, str]:
        async with session.get(server.url + "/echo") as r:
            return r.status, await r.text()

    with record(cassette_path, hooks=Hooks(interpose=fault)):
        assert run(agent) == (503, "down")
    assert server.seen == []
    (event,) = http_events(cassette_path)
    assert event.response is not None and event.response.status == 503


@pytest.mark.parametrize("verdict", [True, "answer"])
def test_ignored_hosts_are_never_recorded(
    cassette_path: Path, server: _Server, verdict: bool | str
) -> None:
    local = HttpResponse(status=204, headers=[], chunks=[])

    async def agent(session: aiohttp.ClientSession) -> int:
        async with session.get(server.url + "/echo") as r:
            await r.read()
            return r.status

    with record(cassette_path) as rec:
        rec.ignored = lambda url: local if verdict == "answer" else True  # type: ignore[method-assign]
        status = run(agent)
    assert http_events(cassette_path) == []
    assert (status, len(server.seen)) == ((200, 1) if verdict is True else (204, 0))
    with playback(cassette_path) as player:
        player.ignored = lambda url: local  # type: ignore[method-assign]
        assert run(agent) == 204
    assert player.misses == []


def test_a_body_released_early_or_left_open_keeps_what_arrived(
    cassette_path: Path, server: _Server
) -> None:
    async def agent(session: aiohttp.ClientSession) -> list[aiohttp.ClientResponse]:
        released = await session.get(server.url + "/sse")
        await released.content.readline()
        released.release()
        left_open = await session.get(server.url + "/sse")
        await left_open.content.readuntil(b"data: 1")
        return [released, left_open]

    async def main() -> None:
        async with aiohttp.ClientSession() as session:
            with record(cassette_path):
                responses = await agent(session)
            responses[1].close()

    asyncio.run(main())
    cassette = read_cassette(cassette_path)
    released, left_open = (e for e in cassette.events if isinstance(e, HttpEvent))
    for event in (released, left_open):
        assert event.response is not None and not event.response.complete
        assert event.error is None and event.response.chunks[0] == LINES[0]
    assert any(isinstance(e, WarningEvent) and "neither read" in e.message for e in cassette.events)


def test_replayed_responses_behave_like_live_ones(cassette_path: Path, server: _Server) -> None:
    async def agent(session: aiohttp.ClientSession) -> list[Any]:
        r = await session.post(server.url + "/echo", data=b"x")
        out = [r.ok, r.reason, r.content_type, r.closed, r.connection is None or r.connection]
        out += [await r.text(), await r.read() == (await r.text()).encode(), r.closed]
        r.release()
        await r.wait_for_close()
        streamed = await session.get(server.url + "/sse")
        out += [await streamed.content.read(3), await streamed.content.readexactly(5)]
        out += [streamed.content.at_eof()]
        out += [await streamed.content.read(), streamed.content.at_eof()]
        streamed.release()
        return out

    with record(cassette_path):
        live = run(agent)
    with playback(cassette_path):
        replayed = run(agent)
    assert live[0:3] == replayed[0:3] == [True, "OK", "application/json"]
    assert live[5:] == replayed[5:]
    assert replayed[7] is True and replayed[-1] is True
