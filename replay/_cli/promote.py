"""``replay promote CASSETTE``: an incident becomes a regression case (``replay.promote``)."""

from __future__ import annotations

from pathlib import Path

import click

from replay import promote

from ..plugins import printable


@click.command("promote")
@click.argument("cassette", type=click.Path(path_type=Path))
@click.option("--id", "case_id", required=True, help="Id of the new case.")
@click.option("--expect", multiple=True, help="An assertion the right outcome meets (repeatable).")
@click.option(
    "--out", type=click.Path(path_type=Path), required=True, help="Directory to write to."
)
@click.option(
    "--fixture",
    type=click.Path(path_type=Path),
    help="The starting world, if the cassette's reference to it is gone.",
)
@click.option("--instruction", help="The instruction, if the cassette's LLM calls lack it.")
def promote_command(
    cassette: Path,
    case_id: str,
    expect: tuple[str, ...],
    out: Path,
    fixture: Path | None,
    instruction: str | None,
) -> None:
    """Turn an incident CASSETTE into a regression case in --out.

    Writes the case file (suite regression, the instruction, the --expect
    assertions and a commented scaffold of what the incident did), a copy
    of the starting world, and the cassette under cassettes/ for offline
    replay: `replay run CASE --mode offline --cassettes OUT/cassettes`.
    """
    made = promote(cassette, case_id, list(expect), out, fixture=fixture, instruction=instruction)
    click.echo(f"wrote {made.case}, {made.fixture} and {made.cassette}")
    if made.truncation:  # as show says: the case replays what it kept, no more
        said = f"{cassette}: {made.truncation}; the case replays what it kept"
        click.echo(f"warning: {printable(said)}", err=True)
