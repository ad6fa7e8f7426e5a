"""Whether an LLM API's event stream reached its own end event.

A client may stop reading a stream once it has the API's end event (the
OpenAI SDK stops after ``data: [DONE]``, leaving the chunked terminator
unread): the transport calls that body unfinished, yet nothing of it is
missing. The other way round, a server that closes the connection after
some events (a body delimited by the connection's end) looks finished to
the transport although the answer stopped short. For the streams of the
LLM APIs we know, the end event decides.
"""

from __future__ import annotations

import json
from collections.abc import Sequence

_END_TYPES = frozenset(
    {
        "response.completed",  # the Responses API: the three ends of a response,
        "response.incomplete",
        "response.failed",
        "message_stop",  # Anthropic Messages
        "error",  # both APIs end a stream with an error event
    }
)
_START_TYPES = frozenset({"response.created", "message_start"})
_CHAT_CHUNK = "chat.completion.chunk"


def _event(block: bytes) -> tuple[str | None, str]:
    """The event name and the data of one SSE event block."""
    name: str | None = None
    data: list[str] = []
    for line in block.decode("utf-8", "replace").split("\n"):
        field, _, value = line.partition(":")
        value = value.removeprefix(" ")
        if field == "event":
            name = value.strip()
        elif field == "data":
            data.append(value)
    return name, "\n".join(data)


def _type(name: str | None, data: str) -> str | None:
    """The event's type: its name, else the ``type`` (or ``object``) of its JSON data."""
    if name:
        return name
    if data.strip() == "[DONE]":
        return "[DONE]"
    try:
        payload = json.loads(data)
    except ValueError:
        return None
    if not isinstance(payload, dict):
        return None
    kind = payload.get("type", payload.get("object"))
    return kind if isinstance(kind, str) else None


def stream_ended(headers: Sequence[tuple[str, str]], chunks: Sequence[bytes]) -> bool | None:
    """Whether a response body is an LLM API stream that reached its end event.

    Returns True when the stream's last event is its API's end (``[DONE]``,
    ``response.completed``/``incomplete``/``failed``, ``message_stop``, an
    ``error`` event); False when it is an OpenAI chat, Responses or Anthropic
    stream without it (it stopped short); None when the body is not an
    event stream of an API we know (or is content-encoded): then the
    transport's account of the body stands.
    """
    fields = {k.lower(): v for k, v in headers}
    if not fields.get("content-type", "").lower().startswith("text/event-stream"):
        return None
    if fields.get("content-encoding", "identity").lower() not in ("", "identity"):
        return None
    body = b"".join(chunks).replace(b"\r\n", b"\n").replace(b"\r", b"\n")
    blocks = [b for b in body.split(b"\n\n") if b.strip()]
    if not blocks:
        return None
    # An event counts once the blank line after it came (SSE dispatches it then).
    last = _type(*_event(blocks[-1])) if body.endswith(b"\n\n") else None
    if last == "[DONE]" or last in _END_TYPES:
        return True
    first = next((t for t in (_type(*_event(b)) for b in blocks[:8]) if t is not None), None)
    if first in _START_TYPES or first == _CHAT_CHUNK:
        return False
    return None
