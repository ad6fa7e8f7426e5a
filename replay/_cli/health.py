"""``replay suite-health`` and ``replay graduate``: keep suites honest (``replay.suite_health``)."""

from __future__ import annotations

from pathlib import Path

import click

from replay import Store, graduate, suite_balance, suite_health

from ..plugins import printable
from ..results import DEFAULT_PATH, MIN_SIDE, MIN_TRIALS, SATURATED


@click.command("suite-health")
@click.argument("runs", nargs=-1)
@click.option("--store", type=click.Path(path_type=Path), default=DEFAULT_PATH, show_default=True)
@click.option(
    "--min-trials",
    default=MIN_TRIALS,
    show_default=True,
    help="Flag a case that failed this many trials without a pass.",
)
@click.option(
    "--saturated",
    default=SATURATED,
    show_default=True,
    help="Flag a capability suite passing this share of its trials.",
)
@click.option(
    "--min-side",
    default=round(MIN_SIDE, 3),
    show_default=True,
    help="Flag a suite whose act or refrain cases are under this share of its declared ones.",
)
def suite_health_command(
    runs: tuple[str, ...], store: Path, min_trials: int, saturated: float, min_side: float
) -> None:
    """Flag cases that never pass, saturated capability suites, cases ready to graduate.

    Reads RUNS (default: every run in the store, oldest first). First each
    suite's balance: its cases that expect the agent to act, to refrain, and
    those that declare neither (`expects:` in the case file); a suite whose
    act or refrain side is under --min-side of its declared cases is flagged
    unbalanced. Graduate a case with `replay graduate CASE_FILE`.
    """
    results = Store(store, create=False)
    chosen = list(runs) or None
    for balance in suite_balance(results, chosen):
        click.echo(printable(f"balance: {balance.suite or '(no suite)'}: {balance.describe()}"))
    flags = suite_health(
        results, chosen, min_trials=min_trials, saturated=saturated, min_side=min_side
    )
    for flag in flags:
        click.echo(printable(f"{flag.kind}: {flag.subject}: {flag.evidence}"))
    if not flags:
        click.echo("nothing to flag")


@click.command("graduate")
@click.argument("case", type=click.Path(exists=True, dir_okay=False, path_type=Path))
def graduate_command(case: Path) -> None:
    """Move a capability CASE into the regression suite (capability/ to regression/)."""
    click.echo(f"graduated: {printable(str(graduate(case)))}")
