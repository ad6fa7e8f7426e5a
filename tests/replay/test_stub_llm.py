"""Tests for the stub LLM server, driven through the official OpenAI and Anthropic SDKs."""

from __future__ import annotations

import asyncio
import http.client
import json
import math
import re
import socket
import subprocess
import sys
import threading
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import anthropic
import openai
import pytest

from replay.stub_llm import (
    ChatRequest,
    EchoPolicy,
    Reply,
    ScriptedPolicy,
    StubLLM,
    ToolCall,
)

WEATHER_ARGS = {"city": "Paris", "unit": "celsius"}
SUNNY = "It is sunny in Paris today."
FINAL = "Bye."

OPENAI_TOOLS: list[Any] = [
    {
        "type": "function",
        "function": {
            "name": "get_weather",
            "description": "Current weather in a city.",
            "parameters": {
                "type": "object",
                "properties": {"city": {"type": "string"}, "unit": {"type": "string"}},
                "required": ["city"],
            },
        },
    }
]
ANTHROPIC_TOOLS: list[Any] = [
    {
        "name": "get_weather",
        "description": "Current weather in a city.",
        "input_schema": {
            "type": "object",
            "properties": {"city": {"type": "string"}, "unit": {"type": "string"}},
            "required": ["city"],
        },
    }
]


def weather_script() -> ScriptedPolicy:
    return ScriptedPolicy(
        [
            Reply(tool_calls=(ToolCall("get_weather", WEATHER_ARGS),)),
            Reply(content=SUNNY),
        ],
        final=FINAL,
    )


@contextmanager
def openai_client(stub: StubLLM) -> Iterator[openai.OpenAI]:
    with openai.OpenAI(base_url=stub.openai_base_url, api_key="test", max_retries=0) as client:
        yield client


@contextmanager
def anthropic_client(stub: StubLLM) -> Iterator[anthropic.Anthropic]:
    with anthropic.Anthropic(
        base_url=stub.anthropic_base_url, api_key="test", max_retries=0
    ) as client:
        yield client


def tokens(*texts: str) -> int:
    return math.ceil(sum(len(text) for text in texts) / 4)


# OpenAI-style conversations at turn 0, 1 and 2 of the weather script.
OPENAI_USER: dict[str, Any] = {"role": "user", "content": "Weather in Paris?"}
OPENAI_TOOL_TURN: list[Any] = [
    OPENAI_USER,
    {
        "role": "assistant",
        "content": None,
        "tool_calls": [
            {
                "id": "call_x",
                "type": "function",
                "function": {"name": "get_weather", "arguments": json.dumps(WEATHER_ARGS)},
            }
        ],
    },
    {"role": "tool", "tool_call_id": "call_x", "content": "sunny, 24C"},
]
OPENAI_CONVERSATIONS: list[list[Any]] = [
    [OPENAI_USER],
    OPENAI_TOOL_TURN,
    [*OPENAI_TOOL_TURN, {"role": "assistant", "content": SUNNY}, {"role": "user", "content": "ok"}],
]


# --------------------------------------------------------------------------- plain replies


def test_openai_text_reply(stub_llm: StubLLM) -> None:
    with openai_client(stub_llm) as client:
        response = client.chat.completions.create(
            model="gpt-test",
            messages=[
                {"role": "system", "content": "You are terse."},
                {"role": "user", "content": "hello world"},
            ],
            temperature=0.2,
        )
    assert response.id == "chatcmpl-stub-1"
    assert response.object == "chat.completion"
    assert response.created == 0
    assert response.model == "gpt-test"
    choice = response.choices[0]
    assert choice.message.role == "assistant"
    assert choice.message.content == "echo: hello world"
    assert choice.message.tool_calls is None
    assert choice.finish_reason == "stop"
    assert response.usage is not None
    assert response.usage.prompt_tokens == tokens("You are terse.", "hello world")
    assert response.usage.completion_tokens == tokens("echo: hello world")
    assert response.usage.total_tokens == (
        response.usage.prompt_tokens + response.usage.completion_tokens
    )
    [body] = stub_llm.requests
    assert body["model"] == "gpt-test"
    assert body["temperature"] == 0.2
    assert body["messages"][1] == {"role": "user", "content": "hello world"}


def test_anthropic_text_reply(stub_llm: StubLLM) -> None:
    with anthropic_client(stub_llm) as client:
        message = client.messages.create(
            model="claude-test",
            max_tokens=256,
            system="You are terse.",
            messages=[{"role": "user", "content": "hello world"}],
        )
    assert message.id == "msg_stub_1"
    assert message.type == "message"
    assert message.role == "assistant"
    assert message.model == "claude-test"
    assert [block.type for block in message.content] == ["text"]
    assert message.content[0].type == "text"
    assert message.content[0].text == "echo: hello world"
    assert message.stop_reason == "end_turn"
    assert message.usage.input_tokens == tokens("You are terse.", "hello world")
    assert message.usage.output_tokens == tokens("echo: hello world")
    [body] = stub_llm.requests
    assert body["max_tokens"] == 256
    assert body["system"] == "You are terse."


def test_echo_policy_with_content_parts(stub_llm: StubLLM) -> None:
    with anthropic_client(stub_llm) as client:
        message = client.messages.create(
            model="claude-test",
            max_tokens=64,
            system=[{"type": "text", "text": "Be brief."}],
            messages=[{"role": "user", "content": [{"type": "text", "text": "parts work"}]}],
        )
    assert message.content[0].type == "text"
    assert message.content[0].text == "echo: parts work"


# --------------------------------------------------------------------------- tool round trips


def test_openai_tool_call_round_trip() -> None:
    with StubLLM(weather_script()) as stub, openai_client(stub) as client:
        messages: list[Any] = [OPENAI_USER]
        first = client.chat.completions.create(
            model="gpt-test", messages=messages, tools=OPENAI_TOOLS
        )
        choice = first.choices[0]
        assert choice.finish_reason == "tool_calls"
        assert choice.message.content is None
        assert choice.message.tool_calls is not None
        [call] = choice.message.tool_calls
        assert call.type == "function"
        assert call.id == "call_stub_1"
        assert call.function.name == "get_weather"
        assert json.loads(call.function.arguments) == WEATHER_ARGS

        messages.append(
            {
                "role": "assistant",
                "content": None,
                "tool_calls": [
                    {
                        "id": call.id,
                        "type": "function",
                        "function": {
                            "name": call.function.name,
                            "arguments": call.function.arguments,
                        },
                    }
                ],
            }
        )
        messages.append({"role": "tool", "tool_call_id": call.id, "content": "sunny, 24C"})
        second = client.chat.completions.create(
            model="gpt-test", messages=messages, tools=OPENAI_TOOLS
        )
        assert second.id == "chatcmpl-stub-2"
        assert second.choices[0].message.content == SUNNY
        assert second.choices[0].finish_reason == "stop"

        messages += [{"role": "assistant", "content": SUNNY}, {"role": "user", "content": "ok"}]
        third = client.chat.completions.create(model="gpt-test", messages=messages)
        assert third.choices[0].message.content == FINAL

        bodies = stub.requests
    assert len(bodies) == 3
    assert bodies[1]["messages"][-1] == {
        "role": "tool",
        "tool_call_id": "call_stub_1",
        "content": "sunny, 24C",
    }
    assert bodies[0]["tools"][0]["function"]["name"] == "get_weather"


def test_anthropic_tool_call_round_trip() -> None:
    with StubLLM(weather_script()) as stub, anthropic_client(stub) as client:
        messages: list[Any] = [{"role": "user", "content": "Weather in Paris?"}]
        first = client.messages.create(
            model="claude-test", max_tokens=256, messages=messages, tools=ANTHROPIC_TOOLS
        )
        assert first.stop_reason == "tool_use"
        [block] = first.content
        assert block.type == "tool_use"
        assert block.id == "toolu_stub_1"
        assert block.name == "get_weather"
        assert block.input == WEATHER_ARGS

        messages.append(
            {
                "role": "assistant",
                "content": [
                    {"type": "tool_use", "id": block.id, "name": block.name, "input": block.input}
                ],
            }
        )
        messages.append(
            {
                "role": "user",
                "content": [
                    {
                        "type": "tool_result",
                        "tool_use_id": block.id,
                        "content": [{"type": "text", "text": "sunny, 24C"}],
                    }
                ],
            }
        )
        second = client.messages.create(
            model="claude-test", max_tokens=256, messages=messages, tools=ANTHROPIC_TOOLS
        )
        assert second.stop_reason == "end_turn"
        assert second.content[0].type == "text"
        assert second.content[0].text == SUNNY

        messages += [
            {"role": "assistant", "content": SUNNY},
            {"role": "user", "content": "ok"},
        ]
        third = client.messages.create(model="claude-test", max_tokens=256, messages=messages)
        assert third.content[0].type == "text"
        assert third.content[0].text == FINAL


class RecordingPolicy:
    def __init__(self) -> None:
        self.seen: list[ChatRequest] = []

    def __call__(self, request: ChatRequest) -> Reply:
        self.seen.append(request)
        return Reply(content="ok")


def test_both_apis_normalize_to_the_same_request() -> None:
    arguments = json.dumps(WEATHER_ARGS)
    policy = RecordingPolicy()
    with StubLLM(policy) as stub:
        with openai_client(stub) as oai:
            oai.chat.completions.create(
                model="m",
                tools=OPENAI_TOOLS,
                messages=[
                    {"role": "system", "content": "sys"},
                    {"role": "user", "content": [{"type": "text", "text": "weather?"}]},
                    {
                        "role": "assistant",
                        "content": None,
                        "tool_calls": [
                            {
                                "id": "c1",
                                "type": "function",
                                "function": {"name": "get_weather", "arguments": arguments},
                            }
                        ],
                    },
                    {"role": "tool", "tool_call_id": "c1", "content": "sunny"},
                    {"role": "assistant", "content": "It is sunny."},
                    {"role": "user", "content": "thanks"},
                ],
            )
        with anthropic_client(stub) as ant:
            ant.messages.create(
                model="m",
                max_tokens=10,
                tools=ANTHROPIC_TOOLS,
                system="sys",
                messages=[
                    {"role": "user", "content": "weather?"},
                    {
                        "role": "assistant",
                        "content": [
                            {
                                "type": "tool_use",
                                "id": "c1",
                                "name": "get_weather",
                                "input": WEATHER_ARGS,
                            }
                        ],
                    },
                    {
                        "role": "user",
                        "content": [
                            {"type": "tool_result", "tool_use_id": "c1", "content": "sunny"}
                        ],
                    },
                    {"role": "assistant", "content": [{"type": "text", "text": "It is sunny."}]},
                    {"role": "user", "content": "thanks"},
                ],
            )
    from_openai, from_anthropic = policy.seen
    assert from_openai.api == "openai"
    assert from_anthropic.api == "anthropic"
    assert from_openai.tools == from_anthropic.tools == ["get_weather"]
    expected_call = {
        "id": "c1",
        "type": "function",
        "function": {"name": "get_weather", "arguments": arguments},
    }
    expected = [
        {"role": "system", "content": "sys", "tool_calls": [], "tool_call_id": None},
        {"role": "user", "content": "weather?", "tool_calls": [], "tool_call_id": None},
        {"role": "assistant", "content": "", "tool_calls": [expected_call], "tool_call_id": None},
        {"role": "tool", "content": "sunny", "tool_calls": [], "tool_call_id": "c1"},
        {"role": "assistant", "content": "It is sunny.", "tool_calls": [], "tool_call_id": None},
        {"role": "user", "content": "thanks", "tool_calls": [], "tool_call_id": None},
    ]
    assert from_openai.messages == expected
    assert from_anthropic.messages == expected


# --------------------------------------------------------------------------- streaming


def test_openai_streaming_text_matches_non_streamed() -> None:
    with StubLLM(ScriptedPolicy([Reply(content=SUNNY)])) as stub, openai_client(stub) as client:
        plain = client.chat.completions.create(model="gpt-test", messages=[OPENAI_USER])
        with client.chat.completions.create(
            model="gpt-test",
            messages=[OPENAI_USER],
            stream=True,
            stream_options={"include_usage": True},
        ) as stream:
            chunks = list(stream)
    assert plain.choices[0].message.content == SUNNY
    # role, one chunk per word, finish, usage
    assert len(chunks) == 1 + len(SUNNY.split()) + 1 + 1
    assert all(chunk.object == "chat.completion.chunk" for chunk in chunks)
    assert all(chunk.model == "gpt-test" for chunk in chunks)
    assert chunks[0].choices[0].delta.role == "assistant"
    words = [c.choices[0].delta.content for c in chunks[1:-2]]
    assert words == ["It ", "is ", "sunny ", "in ", "Paris ", "today."]
    assert "".join(c.choices[0].delta.content or "" for c in chunks if c.choices) == SUNNY
    assert chunks[-2].choices[0].finish_reason == "stop"
    assert chunks[-1].choices == []
    assert chunks[-1].usage == plain.usage


def test_openai_streaming_tool_call_matches_non_streamed() -> None:
    with StubLLM(weather_script()) as stub, openai_client(stub) as client:
        plain = client.chat.completions.create(
            model="gpt-test", messages=[OPENAI_USER], tools=OPENAI_TOOLS
        )
        with client.chat.completions.create(
            model="gpt-test", messages=[OPENAI_USER], tools=OPENAI_TOOLS, stream=True
        ) as stream:
            chunks = list(stream)
        with client.chat.completions.stream(
            model="gpt-test", messages=[OPENAI_USER], tools=OPENAI_TOOLS
        ) as helper:
            assembled = helper.get_final_completion()
    # role, tool call header, three argument pieces, finish (no usage chunk requested)
    assert len(chunks) == 6
    header = chunks[1].choices[0].delta.tool_calls
    assert header is not None
    assert header[0].id == "call_stub_2"
    assert header[0].function is not None
    assert header[0].function.name == "get_weather"
    assert header[0].function.arguments == ""
    pieces = []
    for chunk in chunks[2:-1]:
        [delta] = chunk.choices[0].delta.tool_calls or []
        assert delta.index == 0
        assert delta.function is not None
        pieces.append(delta.function.arguments or "")
    assert len(pieces) == 3
    assert chunks[-1].choices[0].finish_reason == "tool_calls"

    [plain_call] = plain.choices[0].message.tool_calls or []
    assert plain_call.type == "function"
    assert "".join(pieces) == plain_call.function.arguments
    [helper_call] = assembled.choices[0].message.tool_calls or []
    assert helper_call.type == "function"
    assert helper_call.function.name == "get_weather"
    assert helper_call.function.arguments == plain_call.function.arguments
    assert assembled.choices[0].finish_reason == "tool_calls"


def test_anthropic_streaming_text_matches_non_streamed() -> None:
    with StubLLM(ScriptedPolicy([Reply(content=SUNNY)])) as stub, anthropic_client(stub) as client:
        kwargs: dict[str, Any] = {
            "model": "claude-test",
            "max_tokens": 256,
            "messages": [{"role": "user", "content": "Weather?"}],
        }
        plain = client.messages.create(**kwargs)
        with client.messages.create(**kwargs, stream=True) as raw:
            events = list(raw)
        with client.messages.stream(**kwargs) as stream:
            text_pieces = list(stream.text_stream)
            final = stream.get_final_message()
    assert [event.type for event in events] == [
        "message_start",
        "content_block_start",
        *["content_block_delta"] * len(SUNNY.split()),
        "content_block_stop",
        "message_delta",
        "message_stop",
    ]
    assert len(text_pieces) == len(SUNNY.split())
    assert "".join(text_pieces) == SUNNY
    assert plain.content[0].type == "text"
    assert plain.content[0].text == SUNNY
    assert final.content[0].type == "text"
    assert final.content[0].text == SUNNY
    assert final.stop_reason == plain.stop_reason == "end_turn"
    assert final.usage.input_tokens == plain.usage.input_tokens
    assert final.usage.output_tokens == plain.usage.output_tokens


def test_anthropic_streaming_tool_call_matches_non_streamed() -> None:
    with StubLLM(weather_script()) as stub, anthropic_client(stub) as client:
        kwargs: dict[str, Any] = {
            "model": "claude-test",
            "max_tokens": 256,
            "tools": ANTHROPIC_TOOLS,
            "messages": [{"role": "user", "content": "Weather?"}],
        }
        plain = client.messages.create(**kwargs)
        with client.messages.create(**kwargs, stream=True) as raw:
            events = list(raw)
        with client.messages.stream(**kwargs) as stream:
            final = stream.get_final_message()
    kinds = [event.type for event in events]
    assert kinds == [
        "message_start",
        "content_block_start",
        "content_block_delta",
        "content_block_delta",
        "content_block_delta",
        "content_block_stop",
        "message_delta",
        "message_stop",
    ]
    [plain_block] = plain.content
    [final_block] = final.content
    assert plain_block.type == final_block.type == "tool_use"
    assert final_block.name == plain_block.name == "get_weather"
    assert final_block.input == plain_block.input == WEATHER_ARGS
    assert final.stop_reason == "tool_use"
    assert final.usage.output_tokens == plain.usage.output_tokens


def test_async_clients() -> None:
    async def run(stub: StubLLM) -> None:
        async with openai.AsyncOpenAI(
            base_url=stub.openai_base_url, api_key="test", max_retries=0
        ) as oai:
            plain = await oai.chat.completions.create(model="m", messages=[OPENAI_USER])
            assert plain.choices[0].message.tool_calls is not None
            stream = await oai.chat.completions.create(
                model="m",
                messages=OPENAI_CONVERSATIONS[1],
                stream=True,
                stream_options={"include_usage": True},
            )
            async with stream:
                chunks = [chunk async for chunk in stream]
            assert len(chunks) > 1
            assert "".join(c.choices[0].delta.content or "" for c in chunks if c.choices) == SUNNY
            assert chunks[-1].usage is not None

        async with anthropic.AsyncAnthropic(
            base_url=stub.anthropic_base_url, api_key="test", max_retries=0
        ) as ant:
            message = await ant.messages.create(
                model="c", max_tokens=64, messages=[{"role": "user", "content": "hi"}]
            )
            assert message.content[0].type == "tool_use"
            async with ant.messages.stream(
                model="c", max_tokens=64, messages=[{"role": "user", "content": "hi"}]
            ) as astream:
                events = [event async for event in astream]
                final = await astream.get_final_message()
            assert len(events) > 1
            assert final.content[0].type == "tool_use"
            assert final.content[0].input == WEATHER_ARGS

    with StubLLM(weather_script()) as stub:
        asyncio.run(run(stub))


def read_raw_response(sock: socket.socket) -> tuple[str, bytes]:
    data = b""
    while chunk := sock.recv(65536):
        data += chunk
    head, _, body = data.partition(b"\r\n\r\n")
    return head.decode(), body


def split_chunks(body: bytes) -> list[bytes]:
    chunks = []
    while True:
        size_line, _, body = body.partition(b"\r\n")
        size = int(size_line, 16)
        if size == 0:
            assert body == b"\r\n"
            return chunks
        chunks.append(body[:size])
        assert body[size : size + 2] == b"\r\n"
        body = body[size + 2 :]


@pytest.mark.parametrize(
    ("path", "body"),
    [
        ("/v1/chat/completions", {"model": "m", "messages": [OPENAI_USER], "stream": True}),
        (
            "/v1/messages",
            {"model": "m", "max_tokens": 9, "messages": [OPENAI_USER], "stream": True},
        ),
    ],
)
def test_each_sse_event_is_its_own_http_chunk(
    stub_llm: StubLLM, path: str, body: dict[str, Any]
) -> None:
    payload = json.dumps(body).encode()
    request = (
        f"POST {path} HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
        f"Content-Length: {len(payload)}\r\nConnection: close\r\n\r\n"
    ).encode() + payload
    with socket.create_connection(("127.0.0.1", stub_llm.port)) as sock:
        sock.sendall(request)
        head, raw_body = read_raw_response(sock)
    assert head.startswith("HTTP/1.1 200")
    assert "Transfer-Encoding: chunked" in head
    assert "Content-Type: text/event-stream" in head
    chunks = split_chunks(raw_body)
    assert len(chunks) > 3
    for chunk in chunks:
        assert chunk.endswith(b"\n\n")
        assert chunk.count(b"\n\n") == 1
        assert chunk.count(b"data: ") == 1
    if path == "/v1/chat/completions":
        assert chunks[-1] == b"data: [DONE]\n\n"
    else:
        assert chunks[-1].startswith(b"event: message_stop\n")


def test_non_streamed_responses_keep_the_connection_alive(stub_llm: StubLLM) -> None:
    conn = http.client.HTTPConnection("127.0.0.1", stub_llm.port, timeout=5)
    try:
        sockets = []
        for _ in range(3):
            conn.request(
                "POST",
                "/v1/chat/completions",
                body=json.dumps({"model": "m", "messages": [OPENAI_USER]}),
                headers={"Content-Type": "application/json"},
            )
            response = conn.getresponse()
            assert response.status == 200
            assert response.getheader("Content-Length") is not None
            assert response.getheader("Transfer-Encoding") is None
            assert json.loads(response.read())["choices"][0]["message"]["content"] == (
                "echo: Weather in Paris?"
            )
            assert not response.will_close
            sockets.append(conn.sock)
        assert sockets[0] is sockets[1] is sockets[2]
    finally:
        conn.close()


# --------------------------------------------------------------------------- errors


def raw_request(
    stub: StubLLM, method: str, path: str, body: bytes = b""
) -> tuple[int, dict[str, Any]]:
    conn = http.client.HTTPConnection("127.0.0.1", stub.port, timeout=5)
    try:
        conn.request(method, path, body=body, headers={"Content-Type": "application/json"})
        response = conn.getresponse()
        return response.status, json.loads(response.read())
    finally:
        conn.close()


def test_unknown_path_is_a_404_json_error(stub_llm: StubLLM) -> None:
    status, body = raw_request(stub_llm, "POST", "/v1/nope", b"{}")
    assert status == 404
    assert body == {"error": {"message": "unknown path: /v1/nope", "type": "not_found_error"}}
    status, body = raw_request(stub_llm, "GET", "/")
    assert status == 404
    assert set(body["error"]) == {"message", "type"}

    # A base URL without /v1 makes the SDKs hit unknown paths.
    with (
        openai.OpenAI(base_url=stub_llm.url, api_key="test", max_retries=0) as client,
        pytest.raises(openai.NotFoundError) as openai_error,
    ):
        client.chat.completions.create(model="m", messages=[OPENAI_USER])
    assert openai_error.value.status_code == 404
    assert "unknown path: /chat/completions" in openai_error.value.message
    with (
        anthropic.Anthropic(base_url=stub_llm.url + "/v2", api_key="test", max_retries=0) as ant,
        pytest.raises(anthropic.NotFoundError),
    ):
        ant.messages.create(model="m", max_tokens=5, messages=[OPENAI_USER])
    assert stub_llm.requests == []


def test_malformed_json_is_a_400_json_error(stub_llm: StubLLM) -> None:
    for path in ("/v1/chat/completions", "/v1/messages"):
        status, body = raw_request(stub_llm, "POST", path, b"{not json")
        assert status == 400
        assert body["error"]["type"] == "invalid_request_error"
        assert body["error"]["message"].startswith("malformed JSON body")
        assert set(body["error"]) == {"message", "type"}
    status, body = raw_request(stub_llm, "POST", "/v1/chat/completions", b"[1, 2]")
    assert status == 400
    assert body["error"]["message"] == "request body must be a JSON object"
    status, body = raw_request(stub_llm, "GET", "/v1/chat/completions")
    assert status == 405


def test_connection_survives_a_bad_request(stub_llm: StubLLM) -> None:
    conn = http.client.HTTPConnection("127.0.0.1", stub_llm.port, timeout=5)
    try:
        conn.request("POST", "/v1/chat/completions", body=b"{oops")
        first = conn.getresponse()
        assert first.status == 400
        first.read()
        sock = conn.sock
        conn.request(
            "POST", "/v1/chat/completions", body=json.dumps({"model": "m", "messages": []})
        )
        second = conn.getresponse()
        assert second.status == 200
        assert json.loads(second.read())["choices"][0]["message"]["content"] == "echo: "
        assert conn.sock is sock
    finally:
        conn.close()


def test_invalid_request_shape_is_a_400_through_the_sdk(stub_llm: StubLLM) -> None:
    with openai_client(stub_llm) as client, pytest.raises(openai.BadRequestError) as error:
        client.chat.completions.create(model="m", messages="not a list")  # type: ignore[arg-type]
    assert "'messages' must be a list" in error.value.message


def broken_policy(request: ChatRequest) -> Reply:
    raise RuntimeError("boom")


def wrong_type_policy(request: ChatRequest) -> Reply:
    return "a string"  # type: ignore[return-value]


def unserializable_policy(request: ChatRequest) -> Reply:
    return Reply(tool_calls=(ToolCall("f", {"when": object()}),))


@pytest.mark.parametrize(
    ("policy", "expected"),
    [
        (broken_policy, "boom"),
        (wrong_type_policy, "expected Reply"),
        (unserializable_policy, "not JSON serializable"),
    ],
)
def test_policy_failure_is_a_500(policy: Any, expected: str) -> None:
    with (
        StubLLM(policy) as stub,
        openai_client(stub) as client,
        pytest.raises(openai.InternalServerError) as error,
    ):
        client.chat.completions.create(model="m", messages=[OPENAI_USER])
    assert expected in error.value.message


# --------------------------------------------------------------------------- flakiness


def reply_key(response: Any) -> tuple[str | None, tuple[tuple[str, str], ...]]:
    message = response.choices[0].message
    calls = tuple((c.function.name, c.function.arguments) for c in message.tool_calls or [])
    return message.content, calls


TOOL_KEY = (None, (("get_weather", json.dumps(WEATHER_ARGS)),))
UNFLAKY = [TOOL_KEY, (SUNNY, ()), (FINAL, ())]
# At turn 0 a flake stops early; later, it repeats the previous turn's reply.
FLAKY = [(FINAL, ()), TOOL_KEY, (SUNNY, ())]


def run_sequence(seed: int, flake_rate: float, rounds: int = 4) -> list[Any]:
    with (
        StubLLM(weather_script(), seed=seed, flake_rate=flake_rate) as stub,
        openai_client(stub) as client,
    ):
        return [
            client.chat.completions.create(model="m", messages=conversation)
            for _ in range(rounds)
            for conversation in OPENAI_CONVERSATIONS
        ]


def test_flake_rate_zero_never_flakes() -> None:
    assert [reply_key(r) for r in run_sequence(seed=3, flake_rate=0.0)] == UNFLAKY * 4


def test_flake_rate_one_always_flakes() -> None:
    responses = run_sequence(seed=3, flake_rate=1.0)
    assert [reply_key(r) for r in responses] == FLAKY * 4
    # The duplicated tool call gets a fresh id, like a real second call.
    ids = [
        r.choices[0].message.tool_calls[0].id for r in responses if r.choices[0].message.tool_calls
    ]
    assert len(ids) == len(set(ids)) == 4


def test_flakiness_is_deterministic_per_seed() -> None:
    first = run_sequence(seed=7, flake_rate=0.5)
    second = run_sequence(seed=7, flake_rate=0.5)
    assert [r.model_dump() for r in first] == [r.model_dump() for r in second]
    keys = [reply_key(r) for r in first]
    flaked = [key == FLAKY[i % 3] for i, key in enumerate(keys)]
    for i, key in enumerate(keys):
        assert key in (UNFLAKY[i % 3], FLAKY[i % 3])
    assert any(flaked)
    assert not all(flaked)


def test_anthropic_flakes_duplicate_the_previous_tool_use() -> None:
    with (
        StubLLM(weather_script(), flake_rate=1.0) as stub,
        anthropic_client(stub) as client,
    ):
        message = client.messages.create(
            model="c",
            max_tokens=64,
            messages=[
                {"role": "user", "content": "Weather?"},
                {
                    "role": "assistant",
                    "content": [
                        {
                            "type": "tool_use",
                            "id": "t1",
                            "name": "get_weather",
                            "input": WEATHER_ARGS,
                        }
                    ],
                },
                {
                    "role": "user",
                    "content": [{"type": "tool_result", "tool_use_id": "t1", "content": "sunny"}],
                },
            ],
        )
    assert message.stop_reason == "tool_use"
    assert message.content[0].type == "tool_use"
    assert message.content[0].input == WEATHER_ARGS


def test_flake_rate_must_be_a_probability() -> None:
    with pytest.raises(ValueError, match="flake_rate"):
        StubLLM(flake_rate=1.5)


# --------------------------------------------------------------------------- concurrency, speed


def test_concurrent_conversations_get_their_own_turns() -> None:
    def conversation(client: openai.OpenAI) -> list[Any]:
        return [
            reply_key(client.chat.completions.create(model="m", messages=messages))
            for messages in OPENAI_CONVERSATIONS
        ]

    with StubLLM(weather_script()) as stub, openai_client(stub) as client:
        with ThreadPoolExecutor(max_workers=8) as pool:
            results = list(pool.map(lambda _: conversation(client), range(16)))
        assert len(stub.requests) == 16 * 3
    assert results == [UNFLAKY] * 16


@pytest.mark.parametrize("api", ["openai", "anthropic"])
def test_the_stub_answers_with_nagle_off(
    stub_llm: StubLLM, api: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Guards the Nagle trap: without TCP_NODELAY each request costs ~44 ms on loopback.

    The socket each request is answered on is looked at, not timed (the cost itself is
    ``bench.record_overhead``'s bare request).
    """
    handler = stub_llm._server.RequestHandlerClass  # type: ignore[union-attr]
    seen: list[int] = []
    setup = handler.setup

    def watched(self: Any) -> None:
        setup(self)
        seen.append(self.connection.getsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY))

    monkeypatch.setattr(handler, "setup", watched)
    with openai_client(stub_llm) as oai, anthropic_client(stub_llm) as ant:
        for _ in range(3):
            if api == "openai":
                oai.chat.completions.create(model="m", messages=[OPENAI_USER])
            else:
                ant.messages.create(model="m", max_tokens=8, messages=[OPENAI_USER])
    assert seen and all(seen), seen


# --------------------------------------------------------------------------- lifecycle


def test_lifecycle_and_urls() -> None:
    stub = StubLLM()
    with pytest.raises(RuntimeError, match="not running"):
        _ = stub.url
    stub.start()
    try:
        with pytest.raises(RuntimeError, match="already running"):
            stub.start()
        assert re.fullmatch(r"http://127\.0\.0\.1:\d+", stub.url)
        assert stub.port > 0
        assert stub.openai_base_url == stub.url + "/v1"
        assert stub.anthropic_base_url == stub.url
    finally:
        stub.stop()
    stub.stop()  # idempotent


def test_stop_does_not_hang_on_idle_keep_alive_connections() -> None:
    stub = StubLLM()
    stub.start()
    conn = http.client.HTTPConnection("127.0.0.1", stub.port, timeout=5)
    try:
        conn.request("POST", "/v1/messages", body=json.dumps({"model": "m", "messages": []}))
        assert conn.getresponse().read()
        stopper = threading.Thread(target=stub.stop)
        stopper.start()
        stopper.join(timeout=5)
        assert not stopper.is_alive()
    finally:
        conn.close()


def test_requests_is_a_snapshot(stub_llm: StubLLM) -> None:
    with openai_client(stub_llm) as client:
        client.chat.completions.create(model="m", messages=[OPENAI_USER])
    snapshot = stub_llm.requests
    snapshot.clear()
    assert len(stub_llm.requests) == 1


def test_stub_module_imports_only_the_standard_library() -> None:
    code = (
        "import sys, replay.stub_llm\n"
        "bad = {'openai', 'anthropic', 'httpx', 'httpx2', 'pydantic'} & set(sys.modules)\n"
        "assert not bad, bad\n"
    )
    subprocess.run([sys.executable, "-c", code], check=True, cwd=Path(__file__).parents[2])


def test_serve_runs_until_interrupted() -> None:
    code = (
        "from replay.stub_llm import EchoPolicy, serve\n"
        "serve(EchoPolicy(), host='127.0.0.1', port=0)\n"
    )
    with subprocess.Popen(
        [sys.executable, "-c", code],
        cwd=Path(__file__).parents[2],
        stderr=subprocess.PIPE,
        text=True,
    ) as proc:
        try:
            assert proc.stderr is not None
            line = proc.stderr.readline()
            match = re.search(r"http://127\.0\.0\.1:(\d+)", line)
            assert match, line
            stub_port = int(match.group(1))
            conn = http.client.HTTPConnection("127.0.0.1", stub_port, timeout=5)
            try:
                conn.request(
                    "POST",
                    "/v1/chat/completions",
                    body=json.dumps({"model": "m", "messages": [OPENAI_USER]}),
                )
                assert conn.getresponse().status == 200
            finally:
                conn.close()
            proc.send_signal(2)  # SIGINT, i.e. Ctrl-C
            assert proc.wait(timeout=10) == 0
        finally:
            if proc.poll() is None:
                proc.kill()
                proc.wait()


# --------------------------------------------------------------------------- scripts


def test_scripted_policy_from_json(tmp_path: Path) -> None:
    path = tmp_path / "script.json"
    path.write_text(
        json.dumps(
            {
                "turns": [
                    {"tool_calls": [{"name": "get_weather", "arguments": WEATHER_ARGS}]},
                    {"content": SUNNY},
                ],
                "final": FINAL,
            }
        )
    )
    policy = ScriptedPolicy.from_json(path)
    assert policy.turns == weather_script().turns
    assert policy.final == FINAL
    with StubLLM(policy) as stub, openai_client(stub) as client:
        keys = [
            reply_key(client.chat.completions.create(model="m", messages=messages))
            for messages in OPENAI_CONVERSATIONS
        ]
    assert keys == UNFLAKY


def test_scripted_policy_from_json_defaults_final(tmp_path: Path) -> None:
    path = tmp_path / "script.json"
    path.write_text('{"turns": [{"content": "hi"}]}')
    assert ScriptedPolicy.from_json(str(path)).final == "Done."


@pytest.mark.parametrize(
    "text",
    [
        "{not json",
        "[]",
        '{"turns": {}}',
        '{"turns": [{}]}',
        '{"turns": [{"content": 3}]}',
        '{"turns": [{"tool_calls": [{"arguments": {}}]}]}',
        '{"turns": [{"content": "x", "extra": 1}]}',
        '{"turns": [], "final": 3}',
    ],
)
def test_scripted_policy_from_json_rejects_bad_scripts(tmp_path: Path, text: str) -> None:
    path = tmp_path / "script.json"
    path.write_text(text)
    with pytest.raises(ValueError, match=r"script\.json"):
        ScriptedPolicy.from_json(path)


def test_echo_policy_without_user_message() -> None:
    request = ChatRequest(model="m", messages=[], tools=[], api="openai")
    assert EchoPolicy()(request) == Reply(content="echo: ")
