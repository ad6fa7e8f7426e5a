"""``replay runs``: the runs in a store (``Store.run_summaries``), filtered; ``--delete`` one."""

from __future__ import annotations

import fnmatch
import json
from pathlib import Path
from typing import Any

import click
from rich.table import Table

from replay import RunSummary, Store

from ..plugins import printable
from ..results import DEFAULT_PATH
from ..views import console


@click.command()
@click.argument("pattern", required=False)
@click.option("--store", type=click.Path(path_type=Path), default=DEFAULT_PATH, show_default=True)
@click.option("--mode", help="Only runs of this mode.")
@click.option("--unfinished", is_flag=True, help="Only runs not finished (to --resume).")
@click.option("--json", "as_json", is_flag=True, help="Print the runs as JSON.")
@click.option(
    "--delete",
    "delete",
    metavar="NAME",
    multiple=True,
    help="Remove this run's trials, grades and labels from the store (its cassettes stay).",
)
def runs(
    pattern: str | None,
    store: Path,
    mode: str | None,
    unfinished: bool,
    as_json: bool,
    delete: tuple[str, ...],
) -> None:
    """List the runs in the store, oldest first: mode, when, trials by verdict.

    PATTERN filters the names (shell-style: 'nightly-*'). With --delete NAME,
    removes those runs instead (each must exist).
    """
    results = Store(store, create=False)
    if delete:
        for name in delete:
            removed = results.delete_run(name)
            click.echo(printable(f"run {name}: deleted ({removed} trials)"))
        return
    found = [
        r
        for r in results.run_summaries()
        if (pattern is None or fnmatch.fnmatchcase(r.name, pattern))
        and (mode is None or r.mode == mode)
        and not (unfinished and r.finished)
    ]
    if as_json:
        click.echo(json.dumps([_json(r) for r in found], indent=2))
        return
    table = Table("run", "mode", "started", "finished", "trials", "verdicts", title_justify="left")
    for r in found:
        verdicts = ", ".join(f"{v.value} {n}" for v, n in r.verdicts.items())
        table.add_row(
            r.name,
            r.mode or "-",
            r.started or "-",
            r.finished or "not finished",
            str(r.trials),
            verdicts or "-",
        )
    out = console()
    if found:
        out.print(table)
    else:
        out.print(f"no run{' matches' if pattern or mode or unfinished else ''} in {results.path}")


def _json(run: RunSummary) -> dict[str, Any]:
    """A run as ``--json`` lists it."""
    return {
        "name": run.name,
        "mode": run.mode,
        "started": run.started,
        "finished": run.finished,
        "trials": run.trials,
        "verdicts": {verdict.value: n for verdict, n in run.verdicts.items()},
    }
