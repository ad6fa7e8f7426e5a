"""``replay grade CASSETTE --case CASE``: review mode for one recorded trial."""

from __future__ import annotations

from pathlib import Path

import click

from recorder import ConfigError
from replay import ExitCode, GradeRecord, load_case, review
from replay.graders import resolve
from replay.modes import load_callable

from ..plugins import printable


@click.command()
@click.argument("cassette", type=click.Path(path_type=Path))
@click.option("--case", "case_path", required=True, type=click.Path(path_type=Path))
@click.option(
    "--tools",
    metavar="MOD:FN",
    help="The case's tool factory (taking the world's connection): `match_reference` "
    "runs the case's reference solution with it (a tau2 airline case: "
    "replay.tau2:airline_tools).",
)
def grade(cassette: Path, case_path: Path, tools: str | None) -> None:
    """Grade a recorded CASSETTE again against CASE (nothing runs).

    Exit 0 when the trial passes; 1 when it failed (verdict fail, or an error
    the agent is to blame for: cause agent or limit); 3 when it could not be
    judged (an error of another cause, unsupported, unknown); 2 on bad input.
    """
    case = load_case(case_path)
    try:  # a misspelled grader is the case's error, not a trial that could not be judged
        resolve(case.grader_uses, strict=True)
    except ConfigError as exc:
        raise ConfigError(f"{case_path}: {exc}") from None
    factory = load_callable(tools) if tools else None
    result = review(case, cassette, tools=factory)
    click.echo(printable(f"{result.case_id}: {result.outcome.verdict.value}"))
    for g in result.outcome.grades:
        credit = GradeRecord.of(g).partial_credit  # under weighted or hybrid scoring
        line = f"  {g.grader}: {g.verdict.value}" + (f" ({credit.describe()})" if credit else "")
        click.echo(printable(line))
        for said in g.evidence:
            click.echo(f"    {printable(said, lines=True)}")
    code = ExitCode.of_results([result])
    if code != ExitCode.OK:
        click.get_current_context().exit(code)
