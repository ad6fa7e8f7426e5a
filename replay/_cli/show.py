"""``replay show CASSETTE``: the transcript in the terminal, or as JSON."""

from __future__ import annotations

import json
from pathlib import Path

import click

from recorder import read_cassette
from replay import cassette_html

from ..plugins import printable
from ..results import write_whole
from ..views import console, render_cassette, to_json


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

    A cassette cut short (a killed recording) or whose recording stopped early
    (a full disk) shows the steps it kept and a warning; a damaged one is an error (exit code 2).
    """
    if html_file is not None and as_json:
        raise click.UsageError("--html and --json cannot be used together")
    data = read_cassette(cassette)
    if html_file is not None:
        write_whole(html_file, cassette_html(data))
        click.echo(f"wrote {html_file}")
    elif as_json:
        click.echo(json.dumps(to_json(data), indent=2))
    else:
        render_cassette(data, console(), bodies=bodies)
    if data.footer is not None and data.footer.stopped is not None:
        said = f"{data.path}: {data.footer.stopped.describe()}"
        click.echo(f"warning: {printable(said)}", err=True)
    if data.truncation:
        click.echo(f"warning: {printable(f'{data.path}: {data.truncation}')}", err=True)
