"""``replay show CASSETTE``: the transcript in the terminal, or as JSON."""

from __future__ import annotations

import json
from pathlib import Path

import click

from recorder import read_cassette
from replay import cassette_html

from ..plugins import printable
from ..results import write_whole
from ..views import console, plain_text, render_cassette, to_json


@click.command()
@click.argument("cassette", type=click.Path(path_type=Path))
@click.option("--json", "as_json", is_flag=True, help="Print the cassette as JSON for tools.")
@click.option("--bodies", is_flag=True, help="Also print raw HTTP bodies of non-LLM calls.")
@click.option(
    "--plain",
    is_flag=True,
    help="Stable plain text, every call whole, no times: what `git diff` shows of a cassette "
    "(.gitattributes `*.cassette diff=replay`; git config diff.replay.textconv "
    "'replay show --plain').",
)
@click.option(
    "--html",
    "html_file",
    type=click.Path(dir_okay=False, path_type=Path),
    help="Write the transcript as one self-contained HTML page instead.",
)
def show(cassette: Path, as_json: bool, bodies: bool, plain: bool, html_file: Path | None) -> None:
    """Show a cassette's transcript: steps, LLM messages, tool calls, world deltas, pins.

    A cassette cut short (a killed recording) or whose recording stopped early
    (a full disk) shows the steps it kept and a warning; a damaged one is an error (exit code 2).
    """
    if sum((html_file is not None, as_json, plain)) > 1:
        raise click.UsageError("give one of --html, --json and --plain")
    data = read_cassette(cassette)
    if html_file is not None:
        write_whole(html_file, cassette_html(data))
        click.echo(f"wrote {html_file}")
    elif as_json:
        click.echo(json.dumps(to_json(data), indent=2))
    elif plain:  # (recorded text escaped: a diff in a terminal is not a way in)
        click.echo(printable(plain_text(data), lines=True), nl=False)
    else:
        render_cassette(data, console(), bodies=bodies)
    if data.footer is not None and data.footer.stopped is not None:
        said = f"{data.path}: {data.footer.stopped.describe()}"
        click.echo(f"warning: {printable(said)}", err=True)
    if data.truncation:
        click.echo(f"warning: {printable(f'{data.path}: {data.truncation}')}", err=True)
