"""The transcript: the readable view of a cassette, as steps in order (pure data)."""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any, Literal

from recorder import (
    Cassette,
    ErrorEvent,
    HttpEvent,
    LlmCall,
    ToolEvent,
    UserEvent,
    WarningEvent,
    WorldDelta,
    llm_call,
)

StepKind = Literal["llm", "http", "tool", "user", "error", "warning"]


@dataclass(frozen=True, slots=True)
class Step:
    """One line of the story: an LLM, HTTP or tool call, a user turn, an error or a warning."""

    index: int
    kind: StepKind
    t: float
    duration: float
    event: HttpEvent | ToolEvent | UserEvent | ErrorEvent | WarningEvent
    llm: LlmCall | None = None
    new_messages: list[dict[str, Any]] = field(default_factory=list)
    """For LLM steps: the messages sent since the model last spoke."""


def steps(cassette: Cassette) -> list[Step]:
    """Return the cassette's events as steps, ordered by start time."""
    out: list[Step] = []
    for event in sorted(cassette.events, key=lambda e: e.t):
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
        else:
            out.append(Step(index, "warning", event.t, 0.0, event))
    return out


def _new_messages(call: LlmCall) -> list[dict[str, Any]]:
    messages = call.messages
    last_assistant = max(
        (i for i, m in enumerate(messages) if m.get("role") == "assistant"), default=-1
    )
    fresh = messages[last_assistant + 1 :]
    if last_assistant < 0 and call.system is not None and call.api == "anthropic":
        fresh = [{"role": "system", "content": call.system}, *fresh]
    return fresh


def message_text(message: dict[str, Any]) -> str:
    """Return the readable text of one message (OpenAI or Anthropic shape)."""
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
                    f"{f}: {change.before.get(f)!r} -> {v!r}" for f, v in change.after.items()
                )
                lines.append(("~", f"{table}[{key!r}] {fields}"))
    return lines


def _fields(row: dict[str, Any]) -> str:
    return "{" + ", ".join(f"{k}: {v!r}" for k, v in row.items()) + "}"


def to_json(cassette: Cassette) -> dict[str, Any]:
    """Return the whole cassette as JSON-ready data, with an ``llm`` view on LLM calls."""
    events = []
    for event in cassette.events:
        data = event.model_dump(mode="json")
        if isinstance(event, HttpEvent):
            data["request"]["body_text"] = _text_or_none(event.request.body)
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
                    "input_tokens": call.input_tokens,
                    "output_tokens": call.output_tokens,
                }
        events.append(data)
    return {
        "path": str(cassette.path),
        "complete": cassette.complete,
        "truncation": cassette.truncation,
        "header": cassette.header.model_dump(mode="json"),
        "events": events,
        "footer": cassette.footer.model_dump(mode="json") if cassette.footer else None,
        "summary": cassette.summary().model_dump(mode="json"),
    }


def _text_or_none(body: bytes) -> str | None:
    try:
        return body.decode("utf-8")
    except UnicodeDecodeError:
        return None
