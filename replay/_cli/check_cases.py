"""``replay check-cases CASES...``: ``replay.check_case`` on each; exit 1 when one fails."""

from __future__ import annotations

from pathlib import Path

import click

from recorder import ConfigError, patched
from replay import ExitCode, check_case, load_callable, load_case
from replay.graders import Verdict, resolve

from ..plugins import printable


@click.command("check-cases")
@click.argument("cases", nargs=-1, required=True, type=click.Path(path_type=Path))
@click.option("--tools", required=True, help="Tool factory module:function (world connection in).")
def check_cases(cases: tuple[Path, ...], tools: str) -> None:
    """Run each case's reference solution (sandbox, no LLM) and grade it.

    Exit 1, naming the case and the assertion, when a grader does not pass
    a reference solution (or raises on it): the case or its graders are
    wrong. Exit 3 when none fails but one could not be judged (an error the
    harness is to blame for, unsupported, unknown). Cases without a
    reference solution are reported.

    First every case is loaded and checked against its fixture's schema,
    without running anything: the tables its assertions, allowed_tables and
    match_reference.multisets name, the columns its assertions filter on,
    aggregate or read (SQL tables; a document collection's fields are open),
    and the key arity of table[key]. A name the fixture lacks is the case's
    error: one line naming the case, exit 2, nothing run.
    """
    factory = load_callable(tools)
    results = []
    loaded = [load_case(path) for path in cases]  # a case error refuses them all, first
    for path, case in zip(cases, loaded, strict=True):  # a misspelled grader too
        try:
            resolve(case.grader_uses, strict=True)
        except ConfigError as exc:
            raise ConfigError(f"{path}: {exc}") from None
    with patched():  # (the interceptors patched in once for all the cases)
        for case in loaded:
            result = check_case(case, factory)
            if result is None:
                click.echo(f"{printable(case.id)}: no reference solution")
                continue
            results.append(result)
            verdict = result.outcome.verdict
            click.echo(f"{printable(case.id)}: {verdict.value}")
            if verdict is not Verdict.PASS:
                for line in result.outcome.evidence:
                    click.echo(f"  {printable(line, lines=True)}")
    codes = [ExitCode.of_results([r], grader_errors_fail=True) for r in results]
    if ExitCode.FAILED in codes:
        click.echo(f"{codes.count(ExitCode.FAILED)} case(s) fail their own reference solution")
    if ExitCode.INCOMPLETE in codes:
        click.echo(f"{codes.count(ExitCode.INCOMPLETE)} case(s) could not be judged")
    code = ExitCode.of_results(results, grader_errors_fail=True)
    if code != ExitCode.OK:
        click.get_current_context().exit(code)
