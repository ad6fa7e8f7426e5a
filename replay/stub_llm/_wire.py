"""What the stub LLM's wire formats share: request errors, the answer, token counts, SSE.

Each API module (``_stub_openai``, ``_stub_anthropic``, ``_stub_responses``) exports one
`Endpoint`; ``stub_llm`` dispatches on the request path through a table of them.
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any

from ._policies import ChatRequest, Reply, ToolCall

# Tool-call arguments are streamed in this many pieces.
ARGUMENT_PIECES = 3


class BadRequest(Exception):
    """The request body is JSON but not a valid request for its endpoint (answered 400)."""


@dataclass(frozen=True, slots=True)
class Answer:
    """A reply plus the deterministic ids assigned to it."""

    request: ChatRequest
    reply: Reply
    response_id: str
    tool_call_ids: tuple[str, ...]


@dataclass(frozen=True, slots=True)
class Endpoint:
    """One API the stub speaks: how to read its requests and write its answers.

    ``render`` and ``stream`` get the request body too, for the options that shape the
    answer (``stream_options``, the fields a Responses object echoes).
    """

    normalize: Callable[[dict[str, Any]], ChatRequest]
    render: Callable[[Answer, dict[str, Any]], dict[str, Any]]
    stream: Callable[[Answer, dict[str, Any]], Iterator[bytes]]
    response_id: str
    """Format of the response id, filled with the server's response counter."""
    tool_call_id: str
    """Format of a tool call id, filled with the server's tool call counter."""


def text_of(content: Any) -> str:
    """Flatten a message content (string, None, or a list of parts/blocks) to text.

    Raises:
        BadRequest: If the content is neither.
    """
    if content is None:
        return ""
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        texts: list[str] = []
        for part in content:
            if isinstance(part, str):
                texts.append(part)
            elif isinstance(part, dict) and isinstance(part.get("text"), str):
                texts.append(part["text"])
        return "".join(texts)
    raise BadRequest("message content must be a string or a list of content parts")


def message(
    role: str,
    content: str,
    tool_calls: list[dict[str, Any]] | None = None,
    tool_call_id: str | None = None,
) -> dict[str, Any]:
    """A normalized message, in the shape `ChatRequest.messages` documents."""
    return {
        "role": role,
        "content": content,
        "tool_calls": tool_calls or [],
        "tool_call_id": tool_call_id,
    }


def tool_call(call_id: str, name: str, arguments: str) -> dict[str, Any]:
    """A normalized tool call (``arguments`` is a JSON string)."""
    return {"id": call_id, "type": "function", "function": {"name": name, "arguments": arguments}}


def tokens(text: str) -> int:
    """The stub's token count: one token per four characters, rounded up."""
    return math.ceil(len(text) / 4)


def prompt_tokens(request: ChatRequest) -> int:
    """Tokens of the conversation's texts and tool calls."""
    chars = 0
    for each in request.messages:
        chars += len(each["content"])
        for call in each["tool_calls"]:
            chars += len(call["function"]["name"]) + len(call["function"]["arguments"])
    return math.ceil(chars / 4)


def arguments_json(call: ToolCall) -> str:
    """A tool call's arguments as the JSON string the APIs carry."""
    return json.dumps(call.arguments, ensure_ascii=False)


def completion_tokens(reply: Reply) -> int:
    """Tokens of the reply's text and tool calls."""
    text = reply.content or ""
    text += "".join(call.name + arguments_json(call) for call in reply.tool_calls)
    return tokens(text)


def reply_text(reply: Reply) -> str | None:
    """The reply's text; an empty reply becomes an empty text."""
    if reply.content is None and not reply.tool_calls:
        return ""
    return reply.content


def words(text: str) -> list[str]:
    """Split text into word pieces that keep their trailing whitespace."""
    return [piece for piece in re.findall(r"\S*\s*", text) if piece]


def pieces(text: str, count: int = ARGUMENT_PIECES) -> list[str]:
    """Split text into about ``count`` pieces (at least one, maybe empty)."""
    size = max(1, math.ceil(len(text) / count))
    return [text[i : i + size] for i in range(0, len(text), size)] or [""]


def sse(data: Any, event: str | None = None) -> bytes:
    """One server-sent event; ``data`` is JSON-encoded unless it is a string."""
    prefix = f"event: {event}\n" if event else ""
    payload = data if isinstance(data, str) else json.dumps(data, ensure_ascii=False)
    return f"{prefix}data: {payload}\n\n".encode()


def require_model(body: dict[str, Any]) -> str:
    """The request's ``model`` ("" when absent).

    Raises:
        BadRequest: If it is not a string.
    """
    model = body.get("model", "")
    if not isinstance(model, str):
        raise BadRequest("'model' must be a string")
    return model


def require_messages(body: dict[str, Any]) -> list[dict[str, Any]]:
    """The request's ``messages``, each an object with a string ``role``.

    Raises:
        BadRequest: If they are not.
    """
    messages = body.get("messages")
    if not isinstance(messages, list):
        raise BadRequest("'messages' must be a list")
    for each in messages:
        if not isinstance(each, dict) or not isinstance(each.get("role"), str):
            raise BadRequest("each message must be an object with a string 'role'")
    return messages
