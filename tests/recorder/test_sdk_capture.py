"""The official SDKs against the stub: every exchange is recorded; streams replay as recorded."""

from __future__ import annotations

import asyncio
import functools
import http.client
import http.server
import json
import threading
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from urllib.parse import urlsplit

import anthropic
import httplib2
import httpx
import openai
import pytest
import requests
import vcr.patch

from recorder import FixtureUnsupported, HttpEvent, llm_call, playback, read_cassette, record
from replay.stub_llm import Reply, ScriptedPolicy, StubLLM, ToolCall

WEATHER = ScriptedPolicy(
    [Reply(tool_calls=(ToolCall("get_weather", {"city": "Paris"}),))],
    final="It is sunny in Paris today.",
)
TOOLS = [
    {
        "type": "function",
        "function": {
            "name": "get_weather",
            "parameters": {"type": "object", "properties": {"city": {"type": "string"}}},
        },
    }
]


def http_events(path: Path) -> list[HttpEvent]:
    return [e for e in read_cassette(path).events if isinstance(e, HttpEvent)]


def test_openai_sync_every_request_and_response(cassette_path: Path) -> None:
    with StubLLM(WEATHER) as llm, record(cassette_path, agent_version="t"):
        client = openai.OpenAI(base_url=llm.openai_base_url, api_key="sk-test", max_retries=0)
        with client:
            first = client.chat.completions.create(
                model="stub-1",
                messages=[{"role": "user", "content": "Weather in Paris?"}],
                tools=TOOLS,  # type: ignore[arg-type]
                temperature=0.2,
            )
            call = first.choices[0].message.tool_calls[0]  # type: ignore[index]
            second = client.chat.completions.create(
                model="stub-1",
                messages=[
                    {"role": "user", "content": "Weather in Paris?"},
                    first.choices[0].message.model_dump(exclude_none=True),  # type: ignore[list-item]
                    {"role": "tool", "tool_call_id": call.id, "content": "sunny"},
                ],
                tools=TOOLS,  # type: ignore[arg-type]
                temperature=0.2,
            )
    events = http_events(cassette_path)
    assert len(events) == 2 == len(llm.requests)
    for event, sent in zip(events, llm.requests, strict=True):
        assert json.loads(event.request.body) == sent
        assert event.via == "httpx2" and event.response is not None and event.response.status == 200
    views = [llm_call(e) for e in events]
    assert views[0] is not None and views[0].reply_tool_calls[0].arguments == {"city": "Paris"}
    assert views[1] is not None and views[1].reply_text == second.choices[0].message.content
    footer = read_cassette(cassette_path).footer
    assert footer is not None
    assert footer.final_answer == "It is sunny in Paris today."
    assert footer.pins.model == "stub-1" and footer.pins.sampling == {"temperature": 0.2}
    assert footer.pins.tool_schema_hash is not None and footer.pins.agent_version == "t"
    assert footer.usage.llm_calls == 2 and footer.usage.input_tokens > 0


def _stream_openai(client: openai.OpenAI) -> list[str]:
    stream = client.chat.completions.create(
        model="stub-1",
        messages=[{"role": "user", "content": "hi"}],
        stream=True,
        stream_options={"include_usage": True},
    )
    return [chunk.model_dump_json() for chunk in stream]


def test_openai_stream_replays_the_same_chunks(cassette_path: Path) -> None:
    policy = ScriptedPolicy([Reply(content="It is sunny in Paris today.")])
    with StubLLM(policy) as llm, record(cassette_path):
        base_url = llm.openai_base_url
        with openai.OpenAI(base_url=base_url, api_key="k", max_retries=0) as client:
            live = _stream_openai(client)
    (event,) = http_events(cassette_path)
    assert event.response is not None
    assert len(event.response.chunks) > 5  # one per SSE event, not one joined body
    with playback(cassette_path):
        # The stub is gone: only the cassette can answer.
        with openai.OpenAI(base_url=base_url, api_key="k", max_retries=0) as client:
            replayed = _stream_openai(client)
    assert replayed == live


def test_raw_chunk_count_is_the_same_live_and_replayed(cassette_path: Path) -> None:
    policy = ScriptedPolicy([Reply(content="one two three four five six seven")])
    body = {"model": "m", "messages": [{"role": "user", "content": "x"}], "stream": True}
    with StubLLM(policy) as llm:
        url = llm.openai_base_url + "/chat/completions"
        with record(cassette_path), httpx.Client() as client:
            with client.stream("POST", url, json=body) as response:
                live = list(response.iter_raw())
        with playback(cassette_path), httpx.Client() as client:
            with client.stream("POST", url, json=body) as response:
                replayed = list(response.iter_raw())
    (event,) = http_events(cassette_path)
    assert event.response is not None and len(event.response.chunks) == len(live) > 5
    assert replayed == live


def test_openai_async_stream_and_not(cassette_path: Path) -> None:
    async def agent(base_url: str) -> tuple[str | None, str]:
        async with openai.AsyncOpenAI(base_url=base_url, api_key="k", max_retries=0) as client:
            plain = await client.chat.completions.create(
                model="a", messages=[{"role": "user", "content": "plain"}]
            )
            stream = await client.chat.completions.create(
                model="a", messages=[{"role": "user", "content": "streamed"}], stream=True
            )
            text = "".join([c.choices[0].delta.content or "" async for c in stream if c.choices])
            return plain.choices[0].message.content, text

    with StubLLM() as llm, record(cassette_path):
        plain, streamed = asyncio.run(agent(llm.openai_base_url))
    events = http_events(cassette_path)
    assert len(events) == 2
    views = [llm_call(e) for e in events]
    assert (
        [v.reply_text for v in views if v] == [plain, streamed] == ["echo: plain", "echo: streamed"]
    )
    assert events[1].response is not None and len(events[1].response.chunks) > 2


@pytest.mark.parametrize("stream", [False, True])
def test_anthropic_sync_and_async(cassette_path: Path, stream: bool) -> None:
    async def async_agent(base_url: str) -> str:
        async with anthropic.AsyncAnthropic(base_url=base_url, api_key="k", max_retries=0) as c:
            msg = await c.messages.create(
                model="claude-stub", max_tokens=50, messages=[{"role": "user", "content": "async"}]
            )
            return msg.content[0].text  # type: ignore[union-attr]

    with StubLLM() as llm, record(cassette_path):
        with anthropic.Anthropic(base_url=llm.anthropic_base_url, api_key="k", max_retries=0) as c:
            if stream:
                with c.messages.stream(
                    model="claude-stub",
                    max_tokens=50,
                    system="be brief",
                    messages=[{"role": "user", "content": "sync"}],
                ) as s:
                    sync_text = s.get_final_text()
            else:
                sync_text = (
                    c.messages.create(
                        model="claude-stub",
                        max_tokens=50,
                        system="be brief",
                        messages=[{"role": "user", "content": "sync"}],
                    )
                    .content[0]
                    .text
                )  # type: ignore[union-attr]
        async_text = asyncio.run(async_agent(llm.anthropic_base_url))
    events = http_events(cassette_path)
    assert len(events) == 2 == len(llm.requests)
    views = [llm_call(e) for e in events]
    assert [v.reply_text for v in views if v] == [sync_text, async_text]
    assert [v.api for v in views if v] == ["anthropic", "anthropic"]
    assert views[0] is not None and views[0].system == "be brief"
    if stream:
        assert events[0].response is not None and len(events[0].response.chunks) > 5
    footer = read_cassette(cassette_path).footer
    assert footer is not None and footer.pins.model == "claude-stub"
    assert footer.pins.system_prompt_hash is not None


def test_requests_goes_through_vcrpy(cassette_path: Path) -> None:
    with StubLLM() as llm:
        body = {"model": "r", "messages": [{"role": "user", "content": "via requests"}]}
        with record(cassette_path), requests.Session() as session:
            live = session.post(llm.openai_base_url + "/chat/completions", json=body).json()
        with playback(cassette_path), requests.Session() as session:
            replayed = session.post(llm.openai_base_url + "/chat/completions", json=body).json()
    (event,) = http_events(cassette_path)
    assert event.via == "vcrpy" and json.loads(event.request.body) == body
    assert replayed == live and live["choices"][0]["message"]["content"] == "echo: via requests"


def _post(conn: http.client.HTTPConnection, path: str, text: str) -> int:
    body = json.dumps({"model": "c", "messages": [{"role": "user", "content": text}]})
    conn.request("POST", path, body, {"content-type": "application/json"})
    response = conn.getresponse()
    response.read()
    return response.status


def test_a_connection_opened_while_vcrpy_sends_is_still_recorded(cassette_path: Path) -> None:
    # vcrpy used to put the real classes back around every real connect and send
    # (force_reset): a connection another thread opened meanwhile was real and
    # never recorded, and httpx lost its interceptor for as long.
    with StubLLM() as llm:
        url = urlsplit(llm.openai_base_url)
        with record(cassette_path), httpx.Client() as client:
            with vcr.patch.force_reset():
                conn = http.client.HTTPConnection(url.hostname or "", url.port)
                client.post(llm.openai_base_url + "/chat/completions", json={"model": "x"})
            assert _post(conn, url.path + "/chat/completions", "opened in a window") == 200
            conn.close()
    assert [e.via for e in http_events(cassette_path)] == ["httpx", "vcrpy"]


def test_threads_opening_connections_while_others_send_are_all_recorded(
    cassette_path: Path,
) -> None:
    with StubLLM() as llm:
        url = urlsplit(llm.openai_base_url)

        def agent(n: int) -> list[int]:
            conn = http.client.HTTPConnection(url.hostname or "", url.port)
            try:
                return [_post(conn, url.path + "/chat/completions", f"{n}.{i}") for i in range(4)]
            finally:
                conn.close()

        with record(cassette_path), ThreadPoolExecutor(16) as pool:
            statuses = [s for batch in pool.map(agent, range(48)) for s in batch]
    assert statuses == [200] * 192 and len(llm.requests) == 192
    assert len(http_events(cassette_path)) == 192


def test_https_connections_still_build_under_the_interceptors(cassette_path: Path) -> None:
    # http.client's HTTPSConnection looks its own name up (super(HTTPSConnection, self)),
    # which vcrpy replaces; building one must still work, and fail only on connecting.
    with record(cassette_path):
        conn = http.client.HTTPSConnection("127.0.0.1", 1, timeout=5)
        conn.request("GET", "/")
        with pytest.raises(ConnectionRefusedError):
            conn.getresponse()
        with pytest.raises(requests.ConnectionError):
            requests.get("https://127.0.0.1:1/", timeout=5)


def test_a_wrapped_https_constructor_still_builds_and_keeps_its_wrapper(
    cassette_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Instrumentation that wraps HTTPSConnection.__init__ hides the real method from the
    # rebinding: the connection is built in vcrpy's window instead, the wrapper runs.
    original = http.client.HTTPSConnection.__init__
    calls = []

    @functools.wraps(original)
    def traced(self: http.client.HTTPSConnection, *args: object, **kwargs: object) -> None:
        calls.append(args)
        original(self, *args, **kwargs)  # type: ignore[arg-type]

    monkeypatch.setattr(http.client.HTTPSConnection, "__init__", traced)
    with record(cassette_path):
        conn = http.client.HTTPSConnection("127.0.0.1", 1, timeout=5)
        conn.request("GET", "/")
        with pytest.raises(ConnectionRefusedError):
            conn.getresponse()
    assert calls and calls[0][:2] == ("127.0.0.1", 1)
    assert http.client.HTTPSConnection.__init__ is traced


def test_httplib2_goes_through_vcrpy(cassette_path: Path) -> None:
    # httplib2 builds its connections with http.client.HTTPConnection.__init__(self, ...),
    # an attribute chain to a class vcrpy patches: built in vcrpy's window.
    with StubLLM() as llm:
        body = {"model": "h", "messages": [{"role": "user", "content": "via httplib2"}]}
        client = httplib2.Http()
        with record(cassette_path):
            response, content = client.request(
                llm.openai_base_url + "/chat/completions",
                "POST",
                body=json.dumps(body),
                headers={"content-type": "application/json"},
            )
        client.close()
    assert response.status == 200 and "echo: via httplib2" in content.decode()
    (event,) = http_events(cassette_path)
    assert event.via == "vcrpy" and json.loads(event.request.body) == body


def test_playback_never_reaches_the_network_on_a_miss(cassette_path: Path) -> None:
    with StubLLM() as llm:
        with record(cassette_path), httpx.Client() as client:
            client.post(
                llm.openai_base_url + "/chat/completions", json={"model": "m", "messages": []}
            )
        with playback(cassette_path) as player, httpx.Client() as client:
            with pytest.raises(Exception, match="fixture unsupported") as info:
                client.post(
                    llm.openai_base_url + "/chat/completions",
                    json={"model": "other", "messages": []},
                )
        assert 'differing in model: "m" -> "other"' in str(info.value)
        assert len(player.misses) == 1
        assert len(llm.requests) == 1  # the miss was not sent


def test_a_miss_names_the_nearest_body_and_the_json_paths_that_differ(
    cassette_path: Path,
) -> None:
    def conversation(*user: str) -> dict[str, object]:
        messages = [{"role": "system", "content": "You run a shop."}]
        messages += [{"role": "user", "content": text} for text in user]
        return {"model": "m", "messages": messages}

    recorded = [conversation("Hi"), conversation("Hi", "Order 2 mugs", "and a plate")]
    with StubLLM() as llm:
        url = llm.openai_base_url + "/chat/completions"
        with record(cassette_path), httpx.Client() as client:
            for body in recorded:
                client.post(url, json=body)
        with playback(cassette_path), httpx.Client() as client:
            with pytest.raises(FixtureUnsupported) as info:
                client.post(url, json=conversation("Hi", "Order 3 mugs", "and a plate"))
            with pytest.raises(FixtureUnsupported) as longer:
                client.post(url, json=conversation("Hi", "Order 2 mugs", "and a plate", "now"))
            with pytest.raises(FixtureUnsupported) as elsewhere:
                client.post(llm.openai_base_url + "/responses", json={"model": "m"})
    message = str(info.value)
    # The true nearest is the longer recorded body, not the first one to that URL.
    assert 'differing in messages[2].content: "Order 2 mugs" -> "Order 3 mugs"' in message
    assert "messages[4:]: 4 items -> 5 items" in str(longer.value)
    assert "nothing to this method and URL; recorded: POST " in str(elsewhere.value)


class _Headers(http.server.BaseHTTPRequestHandler):
    """Repeated and interleaved headers; ``/chunked`` sends its body in chunks."""

    def do_GET(self) -> None:
        self.send_response(200)
        for name, value in [
            ("X-B", "1"),
            ("Set-Cookie", "a=1"),
            ("X-A", "2"),
            ("Set-Cookie", "b=2"),
        ]:
            self.send_header(name, value)
        if self.path == "/chunked":
            self.send_header("Transfer-Encoding", "chunked")
            self.end_headers()
            self.wfile.write(b"3\r\nabc\r\n3\r\ndef\r\n0\r\n\r\n")
            return
        self.send_header("Content-Length", "2")
        self.end_headers()
        self.wfile.write(b"ok")

    def log_message(self, *args: object) -> None:
        """Quiet."""


def test_a_recorded_http_client_response_has_the_real_ones_headers(cassette_path: Path) -> None:
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), _Headers)
    threading.Thread(target=server.serve_forever, daemon=True).start()

    def get(path: str) -> tuple[list[tuple[str, str]], bytes]:
        conn = http.client.HTTPConnection("127.0.0.1", server.server_address[1], timeout=10)
        conn.request("GET", path)
        response = conn.getresponse()
        body = response.read()
        conn.close()
        return [(k, v) for k, v in response.msg.items() if k not in ("Date", "Server")], body

    try:
        real = get("/")
        real_chunked = get("/chunked")
        with record(cassette_path):
            recorded = get("/")
            recorded_chunked = get("/chunked")
    finally:
        server.shutdown()
        server.server_close()
    assert recorded == real  # every header, repeated ones too, in the server's order
    assert real_chunked[1] == recorded_chunked[1] == b"abcdef"
    # The agent reads the real response (teed), so it sees exactly the live headers.
    assert recorded_chunked[0] == real_chunked[0]
    assert [e.response.status for e in http_events(cassette_path) if e.response] == [200, 200]
