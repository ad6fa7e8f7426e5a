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

    First every case is loaded and checked against its fixture's schema,
    without running anything: the tables its assertions, allowed_tables and
    match_reference.multisets name, the columns its assertions filter on,
    aggregate or read (SQL tables; a document collection's fields are open),
    and the key arity of table[key]. A name the fixture lacks is the case's
    error: one line naming the case, exit 2, nothing run.
    """
    factory = load_callable(tools)
    failed = 0
    loaded = [load_case(path) for path in cases]  # a case error refuses them all, first
    for case in loaded:
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
