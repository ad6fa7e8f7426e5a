"""The stub LLM's Anthropic messages API (``POST /v1/messages``)."""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

from ._policies import ChatRequest
from ._wire import (
    Answer,
    BadRequest,
    Endpoint,
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
    """Read a messages request body into the OpenAI-style `ChatRequest`.

    Raises:
        BadRequest: If the body is not a valid messages request.
    """
    model = require_model(body)
    raw_messages = require_messages(body)
    messages: list[dict[str, Any]] = []
    system = body.get("system")
    if system:
        messages.append(message("system", text_of(system)))
    for raw in raw_messages:
        role = raw["role"]
        content = raw.get("content")
        if not isinstance(content, list):
            messages.append(message(role, text_of(content)))
            continue
        texts: list[str] = []
        tool_calls: list[dict[str, Any]] = []
        tool_results: list[dict[str, Any]] = []
        for block in content:
            if not isinstance(block, dict):
                raise BadRequest("content blocks must be objects")
            kind = block.get("type")
            if kind == "text":
                texts.append(str(block.get("text", "")))
            elif kind == "tool_use":
                tool_calls.append(
                    tool_call(
                        str(block.get("id", "")),
                        str(block.get("name", "")),
                        json.dumps(block.get("input", {}), ensure_ascii=False),
                    )
                )
            elif kind == "tool_result":
                tool_results.append(
                    message(
                        "tool",
                        text_of(block.get("content")),
                        tool_call_id=str(block.get("tool_use_id", "")),
                    )
                )
        # Tool results answer the previous assistant turn, so they come first, as in OpenAI.
        messages.extend(tool_results)
        if texts or tool_calls or not tool_results:
            messages.append(message(role, "".join(texts), tool_calls))
    tools = [
        str(tool["name"])
        for tool in body.get("tools") or []
        if isinstance(tool, dict) and "name" in tool
    ]
    return ChatRequest(model=model, messages=messages, tools=tools, api="anthropic")


def _blocks(answer: Answer) -> list[dict[str, Any]]:
    blocks: list[dict[str, Any]] = []
    text = reply_text(answer.reply)
    if text is not None:
        blocks.append({"type": "text", "text": text})
    for call_id, call in zip(answer.tool_call_ids, answer.reply.tool_calls, strict=True):
        blocks.append(
            {"type": "tool_use", "id": call_id, "name": call.name, "input": call.arguments}
        )
    return blocks


def message_object(answer: Answer, body: dict[str, Any]) -> dict[str, Any]:
    """The ``message`` object answering a non-streamed request."""
    return {
        "id": answer.response_id,
        "type": "message",
        "role": "assistant",
        "model": answer.request.model,
        "content": _blocks(answer),
        "stop_reason": "tool_use" if answer.reply.tool_calls else "end_turn",
        "stop_sequence": None,
        "usage": {
            "input_tokens": prompt_tokens(answer.request),
            "output_tokens": completion_tokens(answer.reply),
        },
    }


def stream(answer: Answer, body: dict[str, Any]) -> Iterator[bytes]:
    """The ``message_start`` ... ``message_stop`` events answering a streamed request."""
    whole = message_object(answer, body)
    start = {**whole, "content": [], "stop_reason": None}
    start["usage"] = {**whole["usage"], "output_tokens": 0}
    yield sse({"type": "message_start", "message": start}, "message_start")
    for index, block in enumerate(whole["content"]):
        first: dict[str, Any]
        if block["type"] == "text":
            first = {"type": "text", "text": ""}
            deltas = [{"type": "text_delta", "text": piece} for piece in words(block["text"])]
        else:
            first = {**block, "input": {}}
            deltas = [
                {"type": "input_json_delta", "partial_json": piece}
                for piece in pieces(json.dumps(block["input"], ensure_ascii=False))
            ]
        yield sse(
            {"type": "content_block_start", "index": index, "content_block": first},
            "content_block_start",
        )
        for delta in deltas:
            yield sse(
                {"type": "content_block_delta", "index": index, "delta": delta},
                "content_block_delta",
            )
        yield sse({"type": "content_block_stop", "index": index}, "content_block_stop")
    yield sse(
        {
            "type": "message_delta",
            "delta": {"stop_reason": whole["stop_reason"], "stop_sequence": None},
            "usage": {"output_tokens": whole["usage"]["output_tokens"]},
        },
        "message_delta",
    )
    yield sse({"type": "message_stop"}, "message_stop")


ENDPOINT = Endpoint(
    normalize=normalize,
    render=message_object,
    stream=stream,
    response_id="msg_stub_{}",
    tool_call_id="toolu_stub_{}",
)
