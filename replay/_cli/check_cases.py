"""``replay check-cases CASES...``: ``replay.check_case`` on each; exit 1 when one fails."""

from __future__ import annotations

from pathlib import Path

import click

from replay import ExitCode, check_case, load_callable, load_case


@click.command("check-cases")
@click.argument("cases", nargs=-1, required=True, type=click.Path(path_type=Path))
@click.option("--tools", required=True, help="Tool factory module:function (world connection in).")
def check_cases(cases: tuple[Path, ...], tools: str) -> None:
    """Run each case's reference solution (sandbox, no LLM) and grade it.

    Exit 1, naming the case and the assertion, when a grader does not pass
    a reference solution: the case or its graders are wrong. Cases without a
    reference solution are reported.
    """
    factory = load_callable(tools)
    failed = 0
    for path in cases:
        case = load_case(path)
        result = check_case(case, factory)
        if result is None:
            click.echo(f"{case.id}: no reference solution")
            continue
        verdict = result.outcome.verdict.value
        click.echo(f"{case.id}: {verdict}")
        if verdict != "pass":
            failed += 1
            for line in result.outcome.evidence:
                click.echo(f"  {line}")
    if failed:
        click.echo(f"{failed} case(s) fail their own reference solution")
        click.get_current_context().exit(ExitCode.FAILED)
