"""Which HTTP exchanges are LLM calls, and what is read out of them (all three APIs)."""

from __future__ import annotations

import json
from typing import Any

import pytest

from recorder import HttpEvent, HttpRequest, HttpResponse, llm_call


def _event(method: str, url: str, body: Any, reply: bytes | None = None) -> HttpEvent:
    raw = body if isinstance(body, bytes) else json.dumps(body).encode()
    response = HttpResponse(status=200, headers=[], chunks=[reply]) if reply is not None else None
    return HttpEvent(
        t=0.0,
        duration=0.1,
        via="httpx",
        request=HttpRequest(method=method, url=url, headers=[], body=raw),
        response=response,
    )


@pytest.mark.parametrize(
    ("method", "url", "body"),
    [
        ("GET", "https://forms.example.com/api/forms/7/responses", b""),
        ("POST", "https://crm.example.com/tickets/9/messages", {"text": "hello"}),
        ("GET", "https://api.openai.com/v1/chat/completions", b""),
    ],
)
def test_rest_paths_that_look_like_llm_apis_are_plain_http(
    method: str, url: str, body: Any
) -> None:
    assert llm_call(_event(method, url, body)) is None


def test_a_responses_call_is_read_with_its_function_calls_and_usage() -> None:
    request = {
        "model": "m",
        "instructions": "Be brief.",
        "input": [
            {"role": "user", "content": "Reserve a mug"},
            {"type": "function_call", "call_id": "c1", "name": "check", "arguments": "{}"},
            {"type": "function_call_output", "call_id": "c1", "output": "5 in stock"},
        ],
        "tools": [{"type": "function", "name": "reserve", "parameters": {}}],
        "temperature": 0,
    }
    reply = {
        "output": [
            {"type": "reasoning", "summary": []},
            {"type": "function_call", "call_id": "c2", "name": "reserve", "arguments": '{"n": 1}'},
        ],
        "usage": {"input_tokens": 12, "output_tokens": 3},
    }
    url = "http://127.0.0.1:1/v1/responses"
    call = llm_call(_event("POST", url, request, json.dumps(reply).encode()))
    assert call is not None and call.api == "responses" and call.system == "Be brief."
    assert call.base_url == "http://127.0.0.1:1/v1" and call.sampling == {"temperature": 0}
    assert [(c.name, c.arguments, c.id) for c in call.reply_tool_calls] == [
        ("reserve", {"n": 1}, "c2")
    ]
    assert (call.input_tokens, call.output_tokens, call.usage_known) == (12, 3, True)


def test_streamed_replies_without_usage_are_unknown_not_zero() -> None:
    chat = b'data: {"choices": [{"delta": {"content": "hi"}}]}\n\ndata: [DONE]\n\n'
    url = "http://h/v1/chat/completions"
    call = llm_call(_event("POST", url, {"model": "m", "stream": True}, chat))
    assert call is not None and call.reply_text == "hi" and not call.usage_known
    done = {"type": "response.completed", "response": {"usage": {"input_tokens": 4}}}
    events = (
        b'data: {"type": "response.output_text.delta", "delta": "ok"}\n\n'
        + b"data: " + json.dumps(done).encode() + b"\n\n"
    )  # fmt: skip
    call = llm_call(_event("POST", "http://h/v1/responses", {"model": "m"}, events))
    assert call is not None and call.reply_text == "ok" and call.usage_known
    assert call.input_tokens == 4


def test_hostile_token_counts_are_not_counted() -> None:
    reply = b'{"choices": [{"message": {"content": "x"}}], "usage": {"prompt_tokens": 1e300}}'
    call = llm_call(_event("POST", "http://h/v1/chat/completions", {"model": "m"}, reply))
    assert call is not None and call.input_tokens == 0


def test_urls_are_remembered_only_when_short() -> None:
    """Each URL's API and base URL are remembered (every call asks them); a file's long URLs
    are read the same but not kept (256 of a megabyte each would hold 256 MB)."""
    from recorder import _llm

    _llm._api_of.cache_clear()
    _llm._remembered_base_url.cache_clear()
    long = "http://h/" + "a" * (1 << 20) + "/v1/chat/completions"
    call = llm_call(_event("POST", long, {"model": "m"}, b'{"choices": []}'))
    assert call is not None and call.api == "openai"
    assert call.base_url == long.removesuffix("/chat/completions")
    assert _llm._api_of.cache_info().currsize == 0
    assert _llm._remembered_base_url.cache_info().currsize == 0
    short = "http://h/v1/chat/completions"
    call = llm_call(_event("POST", short, {"model": "m"}, b'{"choices": []}'))
    assert call is not None and call.base_url == "http://h/v1"
    assert _llm._api_of.cache_info().currsize == 1
