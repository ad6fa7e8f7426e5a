"""The terminal transcript of one cassette (rich): ``replay show``.

Its steps (LLM calls with the messages sent since the model last spoke, tool
calls with their deltas, user turns, errors with the end of their traceback,
warnings, violations), then its outcome, usage, capture manifest and pins.
"""

from __future__ import annotations

import json
from typing import Any

from rich.console import Console
from rich.markup import escape
from rich.table import Table

from recorder import (
    Cassette,
    ErrorEvent,
    HttpEvent,
    ToolEvent,
    UserEvent,
    ViolationEvent,
    WarningEvent,
)

from ._transcript import (
    Step,
    delta_lines,
    message_role,
    message_text,
    steps,
    tokens_text,
    usage_text,
)

_SIGN_STYLE = {"+": "green", "-": "red", "~": "yellow"}


TRACEBACK_LINES = 20
"""Lines of an error's traceback ``replay show`` prints (its end: where it was raised)."""


def _short(value: Any, limit: int = 300) -> str:
    text = value if isinstance(value, str) else json.dumps(value, default=str)
    return text if len(text) <= limit else text[: limit - 1] + "…"


def _failed(event: Any) -> str | None:
    """Why an LLM call got no answer: its error, or its error status and message.

    (A frozen LLM's miss is a 400 whose message names it: ``recorder.refusal``.)
    """
    if not isinstance(event, HttpEvent):
        return None
    if event.error is not None:
        return f"{event.error.type}: {event.error.message}"
    if event.response is None or event.response.status < 400:
        return None
    try:
        said = json.loads(event.response.body() or b"{}")["error"]["message"]
    except (ValueError, KeyError, TypeError):
        said = ""
    return f"HTTP {event.response.status}" + (f": {said}" if said else "")


def render_cassette(cassette: Cassette, out: Console, *, bodies: bool = False) -> None:
    """A cassette's transcript: its steps, outcome, usage and pins."""
    head = cassette.header
    summary = cassette.summary()
    title = f"[bold]{escape(str(cassette.path))}[/]"
    if head.case_id:
        title += f"  case [bold]{escape(head.case_id)}[/]"
    if head.trial is not None:
        title += f"  trial {head.trial}"
    out.print(title)
    out.print(f"recorded {escape(head.started_at)} by agent-replay {escape(head.recorder_version)}")
    for step in steps(cassette):
        _render_step(step, out, bodies=bodies)
    out.print()
    status = "[red]error[/]" if summary.status == "error" else "[green]ok[/]"
    out.print(f"[bold]outcome[/] {status}")
    if summary.final_answer is not None:
        out.print(f"  final answer: {escape(summary.final_answer)}")
    if summary.state_diff is not None:
        lines = delta_lines(summary.state_diff)
        out.print(f"  state diff: {len(lines)} row(s) changed")
        for sign, text in lines:
            out.print(f"    [{_SIGN_STYLE[sign]}]{sign} {escape(text)}[/]")
    u, t = summary.usage, summary.timings
    out.print(f"  usage: {escape(usage_text(u))}")
    out.print(f"  time: {t.total:.3f} s total, {t.llm:.3f} s LLM, {t.tools:.3f} s tools")
    out.print("[bold]captured[/]")
    for line in cassette.manifest():
        text = escape(line.describe())
        out.print(f"  {text}" if line.state == "captured" else f"  [dim]{text}[/]")
    pins = Table("pin", "value", title="pins", title_justify="left", show_edge=False)
    for name, value in summary.pins.model_dump(exclude_defaults=True).items():
        pins.add_row(name, escape(_short(value, 120)))
    out.print(pins)


def _render_step(step: Step, out: Console, *, bodies: bool) -> None:
    event = step.event
    timing = f"[dim]+{step.t:.3f}s {step.duration * 1000:.1f} ms[/]"
    if step.llm is not None:
        call = step.llm
        out.print(
            f"\n[bold cyan]{step.index}. LLM[/] {call.api} {escape(call.model or '?')} {timing} "
            f"[dim]{tokens_text(call)}"
            f"{', streamed' if call.stream else ''}[/]"
        )
        for message in step.new_messages:
            role = escape(message_role(message))
            out.print(f"   [magenta]{role}[/]: {escape(_short(message_text(message)))}")
        if call.reply_text:
            out.print(f"   [bold magenta]assistant[/]: {escape(_short(call.reply_text))}")
        for tc in call.reply_tool_calls:
            call_text = f"{tc.name}({_short(tc.arguments)})"
            out.print(f"   [bold magenta]assistant[/] calls {escape(call_text)}")
        failed = _failed(event)
        if failed is not None:
            missed = "FixtureUnsupported" in failed
            label = "missed: the recording does not hold it" if missed else "failed"
            out.print(f"   [bold red]{label}[/]: {escape(_short(failed, 1000))}")
    elif isinstance(event, HttpEvent):
        status = event.response.status if event.response else "no response"
        out.print(
            f"\n[bold blue]{step.index}. HTTP[/] {escape(event.request.method)} "
            f"{escape(event.request.url)} → {status} {timing}"
        )
        if event.response is not None:
            out.print(f"   [dim]{len(event.response.chunks)} chunk(s) via {escape(event.via)}[/]")
            if bodies:
                body = b"".join(event.response.chunks).decode("utf-8", "replace")
                out.print(f"   {escape(_short(body, 2000))}")
        if event.error:
            out.print(f"   [red]{escape(event.error.type)}: {escape(event.error.message)}[/]")
    elif isinstance(event, ToolEvent):
        args = ", ".join(f"{k}={v!r}" for k, v in event.args.items())
        out.print(
            f"\n[bold green]{step.index}. tool[/] {escape(f'{event.name}({args})')} "
            f"[dim]{event.effect}[/] {timing}"
        )
        if event.error is not None:
            out.print(
                f"   [red]raised {escape(event.error.type)}: {escape(event.error.message)}[/]"
            )
        else:
            out.print(f"   → {escape(_short(event.result))}")
        for sign, text in delta_lines(event.delta or {}):
            out.print(f"   [{_SIGN_STYLE[sign]}]{sign} {escape(text)}[/]")
    elif isinstance(event, UserEvent):
        who = f"user ({event.source}{', ' + event.model if event.model else ''})"
        out.print(f"\n[bold magenta]{step.index}. {escape(who)}[/] {timing}")
        if event.said is not None:
            out.print(f"   agent: {escape(_short(event.said, 2000))}")
        if event.error is not None:
            out.print(
                f"   [red]the simulated user failed: {escape(event.error.type)}: "
                f"{escape(event.error.message)}[/]"
            )
        else:
            stop = " [dim](ends the conversation)[/]" if event.stop else ""
            out.print(f"   user: {escape(_short(event.reply or '', 2000))}{stop}")
    elif isinstance(event, ErrorEvent):
        out.print(
            f"\n[bold red]{step.index}. error[/] {escape(event.error.type)}: "
            f"{escape(event.error.message)}"
        )
        if event.error.traceback:  # where it was raised: the last frames
            lines = event.error.traceback.rstrip().splitlines()
            shown = lines[-TRACEBACK_LINES:]
            if len(lines) > len(shown):
                out.print(f"   [dim]... {len(lines) - len(shown)} lines of traceback before[/]")
            for line in shown:
                out.print(f"   [dim]{escape(line)}[/]")
    elif isinstance(event, ViolationEvent):
        out.print(
            f"\n[bold red]{step.index}. sandbox violation[/] {escape(event.action)} "
            f"{escape(event.target)} [dim](refused by the {escape(event.via)} check)[/]"
        )
    elif isinstance(event, WarningEvent):
        out.print(f"\n[bold yellow]{step.index}. warning[/] {escape(event.message)}")
        for sign, text in delta_lines(event.delta or {}):
            out.print(f"   [{_SIGN_STYLE[sign]}]{sign} {escape(text)}[/]")
