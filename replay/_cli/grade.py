"""``replay grade CASSETTE --case CASE``: review mode for one recorded trial."""

from __future__ import annotations

from pathlib import Path

import click

from replay import ExitCode, load_case, review


@click.command()
@click.argument("cassette", type=click.Path(path_type=Path))
@click.option("--case", "case_path", required=True, type=click.Path(path_type=Path))
def grade(cassette: Path, case_path: Path) -> None:
    """Grade a recorded CASSETTE again against CASE (nothing runs). Exit 1 if it does not pass."""
    result = review(load_case(case_path), cassette)
    click.echo(f"{result.case_id}: {result.outcome.verdict.value}")
    for g in result.outcome.grades:
        click.echo(f"  {g.grader}: {g.verdict.value}")
        for line in g.evidence:
            click.echo(f"    {line}")
    if result.outcome.verdict.value != "pass":
        click.get_current_context().exit(ExitCode.FAILED)
