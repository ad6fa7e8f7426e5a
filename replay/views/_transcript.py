"""The transcript: the readable view of a cassette, as steps in order (pure data)."""

from __future__ import annotations

import base64
import json
from dataclasses import dataclass, field
from typing import Any, Literal

from recorder import (
    Cassette,
    ErrorEvent,
    HttpEvent,
    LlmCall,
    ToolEvent,
    Usage,
    UserEvent,
    ViolationEvent,
    WarningEvent,
    WorldDelta,
    llm_call,
    load_json,
)

from ..graders import step_order

StepKind = Literal["llm", "http", "tool", "user", "error", "warning", "violation"]


@dataclass(frozen=True, slots=True)
class Step:
    """One step of the story: a call (LLM, HTTP, tool), a user turn, an error, a warning..."""

    index: int
    kind: StepKind
    t: float
    duration: float
    event: HttpEvent | ToolEvent | UserEvent | ErrorEvent | WarningEvent | ViolationEvent
    llm: LlmCall | None = None
    new_messages: list[dict[str, Any]] = field(default_factory=list)
    """For LLM steps: the messages sent since the model last spoke."""


def steps(cassette: Cassette) -> list[Step]:
    """Return the cassette's events as steps, ordered by start time (``step_order``)."""
    out: list[Step] = []
    for event in step_order(cassette.events):
        index = len(out) + 1
        if isinstance(event, HttpEvent):
            call = llm_call(event)
            if call is not None:
                out.append(
                    Step(index, "llm", event.t, event.duration, event, call, _new_messages(call))
                )
            else:
                out.append(Step(index, "http", event.t, event.duration, event))
        elif isinstance(event, ToolEvent):
            out.append(Step(index, "tool", event.t, event.duration, event))
        elif isinstance(event, UserEvent):
            out.append(Step(index, "user", event.t, event.duration, event))
        elif isinstance(event, ErrorEvent):
            out.append(Step(index, "error", event.t, 0.0, event))
        elif isinstance(event, ViolationEvent):
            out.append(Step(index, "violation", event.t, 0.0, event))
        else:
            out.append(Step(index, "warning", event.t, 0.0, event))
    return out


_ITEM_ROLES = {
    "function_call": "assistant",
    "function_call_output": "tool",
    "reasoning": "assistant",
}
"""Roles of the Responses API's input items that are not messages."""


def message_role(message: dict[str, Any]) -> str:
    """Return who speaks in one message or Responses input item."""
    role = message.get("role") or _ITEM_ROLES.get(str(message.get("type")))
    return str(role or "?")


def _new_messages(call: LlmCall) -> list[dict[str, Any]]:
    messages = call.messages
    last_assistant = max(
        (i for i, m in enumerate(messages) if message_role(m) == "assistant"), default=-1
    )
    fresh = messages[last_assistant + 1 :]
    told = any(message_role(m) in ("system", "developer") for m in fresh)
    if last_assistant < 0 and call.system is not None and call.api != "openai" and not told:
        fresh = [{"role": "system", "content": call.system}, *fresh]
    return fresh


def tokens_text(call: LlmCall) -> str:
    """``120→30 tokens``, or ``tokens unknown`` for a reply that reported no usage."""
    if not call.usage_known:
        return "tokens unknown"
    return f"{call.input_tokens}→{call.output_tokens} tokens"


def usage_text(usage: Usage) -> str:
    """The trial's LLM usage in words; unknown usage and ignored calls said, never hidden."""
    text = (
        f"{usage.llm_calls} LLM calls ({usage.input_tokens} in / {usage.output_tokens} out tokens"
    )
    if usage.llm_calls_without_usage:
        text += f"; {usage.llm_calls_without_usage} calls reported no usage: a lower bound"
    text += f"), {usage.tool_calls} tool calls, {usage.http_calls} HTTP calls"
    ignored = sum(usage.ignored.values())
    if ignored:
        hosts = ", ".join(f"{host} {n}" for host, n in sorted(usage.ignored.items()))
        text += f", {ignored} ignored ({hosts})"
    return text


def message_text(message: dict[str, Any]) -> str:
    """Return the readable text of one message (OpenAI, Responses or Anthropic shape)."""
    kind = message.get("type")
    if kind == "function_call":
        return f"[tool call] {message.get('name')}({message.get('arguments', '')})"
    if kind == "function_call_output":
        return f"[tool result] {_plain(message.get('output'))}"
    content = message.get("content")
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        parts = []
        for block in content:
            if not isinstance(block, dict):
                parts.append(str(block))
            elif block.get("type") == "tool_result":
                parts.append(f"[tool result] {message_text(block)}")
            elif block.get("type") == "tool_use":
                parts.append(f"[tool call] {block.get('name')}({json.dumps(block.get('input'))})")
            elif "text" in block:
                parts.append(str(block["text"]))
        return "\n".join(parts)
    return "" if content is None else str(content)


def _plain(value: Any) -> str:
    if isinstance(value, str):
        return value
    if isinstance(value, list):  # a Responses tool output given as content parts
        return message_text({"content": value})
    return json.dumps(value, default=str)


def delta_lines(delta: WorldDelta) -> list[tuple[str, str]]:
    """Return a (sign, text) line per changed row: ``+`` inserted, ``-`` deleted, ``~`` updated."""
    lines = []
    for table, changes in delta.items():
        for change in changes:
            key = change.key[0] if len(change.key) == 1 else tuple(change.key)
            if change.before is None and change.after is not None:
                lines.append(("+", f"{table} {_fields(change.after)}"))
            elif change.after is None and change.before is not None:
                lines.append(("-", f"{table}[{key!r}] {_fields(change.before)}"))
            elif change.before is not None and change.after is not None:
                fields = ", ".join(
                    text
                    for f, v in change.after.items()
                    for text in _changed(f, change.before.get(f), v)
                )
                lines.append(("~", f"{table}[{key!r}] {fields}"))
    return lines


_ABSENT = object()
NESTED_CHANGES = 10
"""Changes listed in one nested document field; past them, how many more."""


def _changed(field: str, before: Any, after: Any) -> list[str]:
    """``field: before -> after``; a JSON document field as the paths in it that changed."""
    old, new = _document(before), _document(after)
    if old is None or new is None:
        return [f"{field}: {before!r} -> {after!r}"]
    found: list[str] = []
    _leaves(field, old, new, found)
    if len(found) > NESTED_CHANGES:
        found = [*found[:NESTED_CHANGES], f"{field}: {len(found) - NESTED_CHANGES} more changes"]
    return found or [f"{field}: {before!r} -> {after!r}"]


def _document(value: Any) -> Any:
    if isinstance(value, (dict, list)):
        return value
    if isinstance(value, str) and value[:1] in ("{", "["):
        try:
            parsed = json.loads(value)
        except ValueError:
            return None
        return parsed if isinstance(parsed, (dict, list)) else None
    return None


def _leaves(path: str, old: Any, new: Any, found: list[str]) -> None:
    if isinstance(old, dict) and isinstance(new, dict):
        for key in [*old, *(k for k in new if k not in old)]:
            _leaves(f"{path}.{key}", old.get(key, _ABSENT), new.get(key, _ABSENT), found)
    elif isinstance(old, list) and isinstance(new, list) and len(old) == len(new):
        for i, (a, b) in enumerate(zip(old, new, strict=True)):
            _leaves(f"{path}[{i}]", a, b, found)
    elif old != new:
        shown = ["(absent)" if v is _ABSENT else repr(v) for v in (old, new)]
        found.append(f"{path}: {shown[0]} -> {shown[1]}")


def _fields(row: dict[str, Any]) -> str:
    return "{" + ", ".join(f"{k}: {v!r}" for k, v in row.items()) + "}"


def to_json(cassette: Cassette) -> dict[str, Any]:
    """Return the whole cassette as JSON-ready data, with an ``llm`` view on LLM calls."""
    events = []
    for event in cassette.events:
        data = event.model_dump(mode="json")
        if isinstance(event, HttpEvent):
            data["request"]["body"], data["request"]["body_is"] = _body(event.request.body)
            if event.response is not None:
                response, chunks = data["response"], event.response.chunks
                encoding = dict(event.response.headers).get("content-encoding", "")
                plain = event.response.body()
                if plain is None:  # kept as it came: encoded, or past the limits
                    response["body"], response["body_is"] = _base64(b"".join(chunks)), "base64"
                else:
                    response["body"], response["body_is"] = _body(plain)
                texts = [_text_or_none(c) for c in chunks]
                if not encoding and all(t is not None for t in texts):
                    response["chunks"] = texts
                    response["chunks_are"] = "text"
                else:
                    response["chunks_are"] = "base64"
            call = llm_call(event)
            if call is not None:
                data["llm"] = {
                    "api": call.api,
                    "model": call.model,
                    "reply_text": call.reply_text,
                    "reply_tool_calls": [
                        {"id": c.id, "name": c.name, "arguments": c.arguments}
                        for c in call.reply_tool_calls
                    ],
                    "input_tokens": call.input_tokens if call.usage_known else None,
                    "output_tokens": call.output_tokens if call.usage_known else None,
                    "base_url": call.base_url,
                }
        events.append(data)
    return {
        "path": str(cassette.path),
        "complete": cassette.complete,
        "truncation": cassette.truncation,
        "header": cassette.header.model_dump(mode="json"),
        "events": events,
        "footer": cassette.footer.model_dump(mode="json") if cassette.footer else None,
        # What a cut cassette's events say its footer would have (the footer, when there is one).
        "summary": None if cassette.footer else cassette.summary().model_dump(mode="json"),
        "manifest": [
            {"channel": c.channel, "state": c.state, "detail": c.detail}
            for c in cassette.manifest()
        ],
    }


def _body(data: bytes) -> tuple[Any, str]:
    """A body as JSON shows it best: parsed JSON, else text, else base64; and which it is."""
    if not data:
        return "", "text"
    try:
        return load_json(data), "json"
    except (ValueError, UnicodeDecodeError):
        pass
    text = _text_or_none(data)
    return (text, "text") if text is not None else (_base64(data), "base64")


def _base64(data: bytes) -> str:
    return base64.b64encode(data).decode("ascii")


def _text_or_none(body: bytes) -> str | None:
    try:
        return body.decode("utf-8")
    except UnicodeDecodeError:
        return None
