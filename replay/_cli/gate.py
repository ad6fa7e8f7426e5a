"""``replay gate``: ``replay.gate`` and ``replay.write_junit``; exit 0 when it holds, 1 when not."""

from __future__ import annotations

from pathlib import Path

import click

from recorder import ConfigError
from replay import ExitCode, Store, Thresholds, gate, write_junit

from ..results._store import DEFAULT_PATH


def _k_value(text: str | None) -> tuple[int, float] | None:
    if text is None:
        return None
    k, _, value = text.partition("=")
    try:
        return int(k), float(value)
    except ValueError:
        raise ConfigError(f"--min-pass-k {text!r} is not K=VALUE, e.g. 4=0.5") from None


@click.command("gate")
@click.option("--baseline", required=True, help="The run to hold the line against.")
@click.option("--candidate", required=True, help="The run under test.")
@click.option("--min-pass1", type=float, help="Minimum suite pass^1 of the candidate.")
@click.option("--min-pass-k", help="K=VALUE: minimum suite pass^K of the candidate.")
@click.option("--max-drop", type=float, help="Largest allowed fall of suite pass^1.")
@click.option(
    "--critical-tag",
    default="critical",
    show_default=True,
    help="Cases with this tag may not newly fail.",
)
@click.option(
    "--max-unsupported", type=float, help="Largest allowed share of unsupported + error trials."
)
@click.option(
    "--vary",
    multiple=True,
    help="A pin meant to differ (repeatable); default: any one of agent, model, settings, llm.",
)
@click.option("--junit", type=click.Path(path_type=Path), help="Write JUnit XML here.")
@click.option("--store", type=click.Path(path_type=Path), default=DEFAULT_PATH, show_default=True)
def gate_command(
    baseline: str,
    candidate: str,
    min_pass1: float | None,
    min_pass_k: str | None,
    max_drop: float | None,
    critical_tag: str,
    max_unsupported: float | None,
    vary: tuple[str, ...],
    junit: Path | None,
    store: Path,
) -> None:
    """Gate a merge: does the candidate run hold against the baseline?

    Exit 0 when every threshold holds, 1 when one does not, 2 on bad input
    (including runs whose pins differ in more than the variable under test:
    the fixture or grader changed too).
    """
    thresholds = Thresholds(
        min_pass1, _k_value(min_pass_k), max_drop, critical_tag, max_unsupported
    )
    result = gate(Store(store, create=False), baseline, candidate, thresholds, vary=vary)
    for check in result.checks:
        click.echo(f"{'ok  ' if check.holds else 'FAIL'} {check.text}")
    for note in result.notes:
        click.echo(f"     {note}")
    if junit is not None:
        write_junit(result, junit, candidate)
    click.echo(
        f"gate {'holds' if result.holds else 'does not hold'}: {candidate} against {baseline}"
    )
    if not result.holds:
        click.get_current_context().exit(ExitCode.FAILED)
