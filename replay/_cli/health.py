"""``replay suite-health`` and ``replay graduate``: keep suites honest (``replay.suite_health``)."""

from __future__ import annotations

from pathlib import Path

import click

from replay import Store, graduate, suite_health

from ..results import DEFAULT_PATH, MIN_TRIALS, SATURATED


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
def suite_health_command(
    runs: tuple[str, ...], store: Path, min_trials: int, saturated: float
) -> None:
    """Flag cases that never pass, saturated capability suites, and cases ready to graduate.

    Reads RUNS (default: every run in the store, oldest first). Graduate a
    case with `replay graduate CASE_FILE`.
    """
    flags = suite_health(
        Store(store, create=False), list(runs) or None, min_trials=min_trials, saturated=saturated
    )
    for flag in flags:
        click.echo(f"{flag.kind}: {flag.subject}: {flag.evidence}")
    if not flags:
        click.echo("nothing to flag")


@click.command("graduate")
@click.argument("case", type=click.Path(exists=True, dir_okay=False, path_type=Path))
def graduate_command(case: Path) -> None:
    """Move a capability CASE into the regression suite (capability/ to regression/)."""
    click.echo(f"graduated: {graduate(case)}")
