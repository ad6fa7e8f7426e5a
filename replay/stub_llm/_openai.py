"""The stub LLM's OpenAI chat completions API (``POST /v1/chat/completions``)."""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

from ._policies import ChatRequest
from ._wire import (
    Answer,
    BadRequest,
    Endpoint,
    arguments_json,
    completion_tokens,
    message,
    pieces,
    prompt_tokens,
    reply_text,
    require_messages,
    require_model,
    sse,
    text_of,
    tool_call,
    words,
)


def normalize(body: dict[str, Any]) -> ChatRequest:
    """Read a chat completions request body.

    Raises:
        BadRequest: If the body is not a valid chat completions request.
    """
    model = require_model(body)
    messages: list[dict[str, Any]] = []
    for raw in require_messages(body):
        tool_calls: list[dict[str, Any]] = []
        for call in raw.get("tool_calls") or []:
            function = call.get("function") if isinstance(call, dict) else None
            if not isinstance(function, dict):
                raise BadRequest("each tool call must have a 'function' object")
            arguments = function.get("arguments", "")
            tool_calls.append(
                tool_call(
                    str(call.get("id", "")),
                    str(function.get("name", "")),
                    arguments if isinstance(arguments, str) else json.dumps(arguments),
                )
            )
        tool_call_id = raw.get("tool_call_id")
        messages.append(
            message(
                raw["role"],
                text_of(raw.get("content")),
                tool_calls,
                str(tool_call_id) if tool_call_id is not None else None,
            )
        )
    tools = [
        str(tool["function"]["name"])
        for tool in body.get("tools") or []
        if isinstance(tool, dict)
        and isinstance(tool.get("function"), dict)
        and "name" in tool["function"]
    ]
    return ChatRequest(model=model, messages=messages, tools=tools, api="openai")


def _usage(answer: Answer) -> dict[str, int]:
    prompt, completion = prompt_tokens(answer.request), completion_tokens(answer.reply)
    return {
        "prompt_tokens": prompt,
        "completion_tokens": completion,
        "total_tokens": prompt + completion,
    }


def completion(answer: Answer, body: dict[str, Any]) -> dict[str, Any]:
    """The ``chat.completion`` object answering a non-streamed request."""
    reply = answer.reply
    assistant: dict[str, Any] = {
        "role": "assistant",
        "content": reply_text(reply),
        "refusal": None,
    }
    if reply.tool_calls:
        assistant["tool_calls"] = [
            tool_call(call_id, call.name, arguments_json(call))
            for call_id, call in zip(answer.tool_call_ids, reply.tool_calls, strict=True)
        ]
    return {
        "id": answer.response_id,
        "object": "chat.completion",
        "created": 0,
        "model": answer.request.model,
        "choices": [
            {
                "index": 0,
                "message": assistant,
                "logprobs": None,
                "finish_reason": "tool_calls" if reply.tool_calls else "stop",
            }
        ],
        "usage": _usage(answer),
    }


def stream(answer: Answer, body: dict[str, Any]) -> Iterator[bytes]:
    """The ``chat.completion.chunk`` events answering a streamed request.

    Usage comes in a last chunk with no choices when ``stream_options.include_usage`` is set.
    """
    reply = answer.reply
    text = reply_text(reply)
    options = body.get("stream_options")
    include_usage = isinstance(options, dict) and options.get("include_usage") is True

    def chunk(delta: dict[str, Any], finish_reason: str | None = None) -> bytes:
        return sse(
            {
                "id": answer.response_id,
                "object": "chat.completion.chunk",
                "created": 0,
                "model": answer.request.model,
                "choices": [
                    {"index": 0, "delta": delta, "logprobs": None, "finish_reason": finish_reason}
                ],
            }
        )

    yield chunk({"role": "assistant", "content": "" if text is not None else None})
    for word in words(text or ""):
        yield chunk({"content": word})
    for index, (call_id, call) in enumerate(
        zip(answer.tool_call_ids, reply.tool_calls, strict=True)
    ):
        first = {"index": index, **tool_call(call_id, call.name, "")}
        yield chunk({"tool_calls": [first]})
        for piece in pieces(arguments_json(call)):
            yield chunk({"tool_calls": [{"index": index, "function": {"arguments": piece}}]})
    yield chunk({}, "tool_calls" if reply.tool_calls else "stop")
    if include_usage:
        yield sse(
            {
                "id": answer.response_id,
                "object": "chat.completion.chunk",
                "created": 0,
                "model": answer.request.model,
                "choices": [],
                "usage": _usage(answer),
            }
        )
    yield sse("[DONE]")


ENDPOINT = Endpoint(
    normalize=normalize,
    render=completion,
    stream=stream,
    response_id="chatcmpl-stub-{}",
    tool_call_id="call_stub_{}",
)
