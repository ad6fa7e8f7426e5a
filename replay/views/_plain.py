"""A cassette as stable plain text (``replay show --plain``): what a code review diffs.

Every step in order with all its content (nothing cut short), JSON with sorted
keys, no colour, and nothing that changes between two recordings of the same
behaviour: no times, durations, token counts, dates or recorder version. So
``git diff`` of two versions of a cassette (through ``.gitattributes``
``*.cassette diff=replay`` and ``git config diff.replay.textconv "replay show
--plain"``) shows the calls that changed.
"""

from __future__ import annotations

import json
from typing import Any

from recorder import (
    Cassette,
    ErrorEvent,
    HttpEvent,
    ToolEvent,
    UserEvent,
    ViolationEvent,
    WarningEvent,
)

from ._transcript import delta_lines, message_role, message_text, steps


def plain_text(cassette: Cassette) -> str:
    """The cassette's transcript as stable text, one line per fact, ending in a newline."""
    head, summary = cassette.header, cassette.summary()
    lines = [f"cassette case={head.case_id or '-'} trial={_text(head.trial)}"]
    if cassette.truncation:
        lines.append(f"cut short: {cassette.truncation}")
    for step in steps(cassette):
        event = step.event
        if step.llm is not None:
            call = step.llm
            lines.append(f"step {step.index} llm {call.api} {call.model or '-'}")
            for message in step.new_messages:
                lines += _block(f"  {message_role(message)}: ", message_text(message))
            if call.reply_text:
                lines += _block("  assistant: ", call.reply_text)
            for tc in call.reply_tool_calls:
                lines.append(f"  assistant calls {tc.name}({_json(tc.arguments)})")
        elif isinstance(event, HttpEvent):
            status = event.response.status if event.response is not None else "no response"
            lines.append(f"step {step.index} http {event.request.method} {event.request.url}")
            lines.append(f"  -> {status}" + (f" {event.error.type}" if event.error else ""))
        elif isinstance(event, ToolEvent):
            lines.append(f"step {step.index} tool {event.name} ({event.effect})")
            lines.append(f"  args: {_json(event.args)}")
            if event.error is not None:
                lines += _block("  error: ", f"{event.error.type}: {event.error.message}")
            else:
                lines += _block("  result: ", _json(event.result))
            lines += [f"  {sign} {text}" for sign, text in delta_lines(event.delta or {})]
        elif isinstance(event, UserEvent):
            lines.append(f"step {step.index} user")
            lines += _block("  said: ", event.said or "")
            lines += _block("  reply: ", event.reply or "")
        elif isinstance(event, ErrorEvent):
            lines += _block(
                f"step {step.index} error ", f"{event.error.type}: {event.error.message}"
            )
        elif isinstance(event, ViolationEvent):
            lines.append(f"step {step.index} violation {event.action} {event.target}")
        elif isinstance(event, WarningEvent):
            lines += _block(f"step {step.index} warning ", event.message)
    lines.append(f"outcome {summary.status}")
    if summary.final_answer is not None:
        lines += _block("final answer: ", summary.final_answer)
    if summary.state_diff is not None:
        lines.append("state diff:")
        lines += [f"  {sign} {text}" for sign, text in delta_lines(summary.state_diff)]
    pins = summary.pins.model_dump(exclude_defaults=True)
    pins.pop("agent_version", None)  # (a commit: it changes with every one)
    lines.append("pins:")
    lines += [f"  {name}: {_json(value)}" for name, value in sorted(pins.items())]
    return "\n".join(lines) + "\n"


def _block(prefix: str, text: str) -> list[str]:
    """``prefix`` and the text's first line; its other lines indented beneath."""
    first, *rest = (text or "").split("\n")
    return [f"{prefix}{first}", *(f"    | {line}" for line in rest)]


def _json(value: Any) -> str:
    return value if isinstance(value, str) else json.dumps(value, sort_keys=True, default=str)


def _text(value: Any) -> str:
    return "-" if value is None else str(value)
