"""``replay show CASSETTE``: the transcript in the terminal, or as JSON."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import click
from rich.console import Console
from rich.markup import escape
from rich.table import Table

from recorder import (
    Cassette,
    ErrorEvent,
    HttpEvent,
    ToolEvent,
    UserEvent,
    WarningEvent,
    read_cassette,
)
from replay import cassette_html

from ..views._transcript import (
    Step,
    delta_lines,
    message_role,
    message_text,
    steps,
    to_json,
    tokens_text,
    usage_text,
)

_SIGN_STYLE = {"+": "green", "-": "red", "~": "yellow"}


@click.command()
@click.argument("cassette", type=click.Path(path_type=Path))
@click.option("--json", "as_json", is_flag=True, help="Print the cassette as JSON for tools.")
@click.option("--bodies", is_flag=True, help="Also print raw HTTP bodies of non-LLM calls.")
@click.option(
    "--html",
    "html_file",
    type=click.Path(dir_okay=False, path_type=Path),
    help="Write the transcript as one self-contained HTML page instead.",
)
def show(cassette: Path, as_json: bool, bodies: bool, html_file: Path | None) -> None:
    """Show a cassette's transcript: steps, LLM messages, tool calls, world deltas, pins.

    A cassette cut short (a killed recording) shows the steps it kept and a
    warning; a damaged one is an error (exit code 2).
    """
    if html_file is not None and as_json:
        raise click.UsageError("--html and --json cannot be used together")
    data = read_cassette(cassette)
    if html_file is not None:
        html_file.parent.mkdir(parents=True, exist_ok=True)
        html_file.write_text(cassette_html(data), encoding="utf-8")
        click.echo(f"wrote {html_file}")
    elif as_json:
        click.echo(json.dumps(to_json(data), indent=2))
    else:
        _render(data, Console(highlight=False, soft_wrap=True), bodies=bodies)
    if data.truncation:
        click.echo(f"warning: {data.path}: {data.truncation}", err=True)


def _short(value: Any, limit: int = 300) -> str:
    text = value if isinstance(value, str) else json.dumps(value, default=str)
    return text if len(text) <= limit else text[: limit - 1] + "…"


def _render(cassette: Cassette, out: Console, *, bodies: bool) -> None:
    head = cassette.header
    summary = cassette.summary()
    title = f"[bold]{escape(str(cassette.path))}[/]"
    if head.case_id:
        title += f"  case [bold]{escape(head.case_id)}[/]"
    if head.trial is not None:
        title += f"  trial {head.trial}"
    out.print(title)
    out.print(f"recorded {head.started_at} by agent-replay {head.recorder_version}")
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
    elif isinstance(event, HttpEvent):
        status = event.response.status if event.response else "no response"
        out.print(
            f"\n[bold blue]{step.index}. HTTP[/] {event.request.method} "
            f"{escape(event.request.url)} → {status} {timing}"
        )
        if event.response is not None:
            out.print(f"   [dim]{len(event.response.chunks)} chunk(s) via {event.via}[/]")
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
    elif isinstance(event, WarningEvent):
        out.print(f"\n[bold yellow]{step.index}. warning[/] {escape(event.message)}")
        for sign, text in delta_lines(event.delta or {}):
            out.print(f"   [{_SIGN_STYLE[sign]}]{sign} {escape(text)}[/]")
