"""``complete`` on a streamed response: the API's own end event makes it whole.

The official SDKs stop reading a stream once they have its end event (the
OpenAI SDK after ``data: [DONE]``, before the chunked terminator): such a
stream is complete. ``complete: false`` means the bytes stopped short.
"""

from __future__ import annotations

import http.server
import json
import threading
from collections.abc import Iterator
from pathlib import Path

import anthropic
import openai
import pytest

from recorder import HttpEvent, read_cassette, record
from replay.stub_llm import ScriptedPolicy, StubLLM

ASK = [{"role": "user", "content": "Hello?"}]


def streamed(path: Path) -> list[HttpEvent]:
    return [e for e in read_cassette(path).events if isinstance(e, HttpEvent)]


def test_sdk_streams_read_to_their_end_event_are_complete(cassette_path: Path) -> None:
    with (
        StubLLM(ScriptedPolicy([], final="Hi there.")) as llm,
        record(cassette_path),
        openai.OpenAI(base_url=llm.openai_base_url, api_key="sk-test", max_retries=0) as client,
        anthropic.Anthropic(
            base_url=llm.anthropic_base_url, api_key="sk-test", max_retries=0
        ) as claude,
    ):
        chat = client.chat.completions.create(model="stub-1", messages=ASK, stream=True)  # type: ignore[arg-type]
        text = "".join(c.choices[0].delta.content or "" for c in chat if c.choices)
        with client.responses.stream(model="stub-1", input="Hello?") as events:
            final = events.get_final_response()
        with claude.messages.stream(model="stub-1", max_tokens=50, messages=ASK) as stream:  # type: ignore[arg-type]
            said = stream.get_final_text()
    assert text == final.output_text == said == "Hi there."
    events = streamed(cassette_path)
    assert [urlpath(e) for e in events] == ["/v1/chat/completions", "/v1/responses", "/v1/messages"]
    assert [e.response is not None and e.response.complete for e in events] == [True] * 3


def urlpath(event: HttpEvent) -> str:
    return "/" + event.request.url.split("/", 3)[3]


CHAT_CHUNK = {
    "id": "c1",
    "object": "chat.completion.chunk",
    "created": 0,
    "model": "stub-1",
    "choices": [{"index": 0, "delta": {"content": "Hi"}, "finish_reason": None}],
}
ANTHROPIC_EVENTS = [
    (
        "message_start",
        {
            "type": "message_start",
            "message": {
                "id": "m1",
                "type": "message",
                "role": "assistant",
                "model": "stub-1",
                "content": [],
                "stop_reason": None,
                "stop_sequence": None,
                "usage": {"input_tokens": 1, "output_tokens": 0},
            },
        },
    ),
    (
        "content_block_start",
        {"type": "content_block_start", "index": 0, "content_block": {"type": "text", "text": ""}},
    ),
    (
        "content_block_delta",
        {"type": "content_block_delta", "index": 0, "delta": {"type": "text_delta", "text": "Hi"}},
    ),
]


class _Cutting(http.server.BaseHTTPRequestHandler):
    """Streams a few events of an answer, then ends the body without the end event."""

    protocol_version = "HTTP/1.1"

    def log_message(self, format: str, *args: object) -> None:
        pass

    def do_POST(self) -> None:
        self.rfile.read(int(self.headers.get("content-length", 0)))
        if self.path.endswith("/messages"):
            events = [
                f"event: {name}\ndata: {json.dumps(data)}\n\n".encode()
                for name, data in ANTHROPIC_EVENTS
            ]
        else:
            events = [f"data: {json.dumps(CHAT_CHUNK)}\n\n".encode()] * 2
        chunked = "chunked" in self.path
        self.send_response(200)
        self.send_header("content-type", "text/event-stream")
        self.send_header(
            "transfer-encoding" if chunked else "connection", "chunked" if chunked else "close"
        )
        self.end_headers()
        for event in events:
            self.wfile.write(b"%x\r\n%s\r\n" % (len(event), event) if chunked else event)
        self.wfile.flush()
        self.close_connection = True  # a chunked body without its terminator: cut mid-body


@pytest.fixture
def cutting() -> Iterator[str]:
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), _Cutting)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}"
    finally:
        server.shutdown()
        server.server_close()


def test_a_stream_that_stops_short_is_not_complete(cutting: str, cassette_path: Path) -> None:
    """Cut by the connection's end (the transport sees a whole body) or mid-chunk (an error)."""
    outcomes = []
    with record(cassette_path):
        for where in ("close", "chunked"):
            url = f"{cutting}/{where}/v1"
            with openai.OpenAI(base_url=url, api_key="k", max_retries=0) as client:
                try:
                    chunks = client.chat.completions.create(
                        model="stub-1",
                        messages=ASK,  # type: ignore[arg-type]
                        stream=True,
                    )
                    outcomes.append("".join(c.choices[0].delta.content or "" for c in chunks))
                except openai.APIError as exc:
                    outcomes.append(type(exc).__name__)
        url = f"{cutting}/close"
        with (
            anthropic.Anthropic(base_url=url, api_key="k", max_retries=0) as claude,
            claude.messages.stream(model="stub-1", max_tokens=50, messages=ASK) as stream,  # type: ignore[arg-type]
        ):
            outcomes.append("".join(stream.text_stream))
    assert outcomes[0] == "HiHi" and outcomes[2] == "Hi"  # the SDKs saw no error
    events = streamed(cassette_path)
    assert len(events) == 3
    assert [e.response is not None and e.response.complete for e in events] == [False] * 3
    assert events[0].error is None and events[2].error is None
