"""``replay label`` (a human verdict beside a trial) and ``replay judge-agreement``."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import click
from rich.console import Console
from rich.markup import escape
from rich.table import Table

from recorder import ConfigError
from replay import Store

from ..results._calibration import MIN_AGREEMENT, MIN_LABELS, agreements, review_queue
from ..results._store import DEFAULT_PATH


def _trial(text: str) -> tuple[str, int]:
    case_id, sep, idx = text.rpartition("#")
    if not sep or not case_id or not idx.isdigit():
        raise ConfigError(f"trial {text!r} is not CASE#INDEX (e.g. refund-4812#0)")
    return case_id, int(idx)


@click.command()
@click.argument("run")
@click.argument("trial")
@click.argument("verdict", type=click.Choice(["pass", "fail"]))
@click.option("--note", default="", help="Why (kept with the label).")
@click.option("--dimension", default="", help="Label one judged dimension (default: the trial).")
@click.option("--store", type=click.Path(path_type=Path), default=DEFAULT_PATH, show_default=True)
def label(run: str, trial: str, verdict: str, note: str, dimension: str, store: Path) -> None:
    """Store a human VERDICT (pass or fail) for TRIAL (CASE#INDEX) of RUN.

    Labels calibrate the LLM judge (see `replay judge-agreement`); labelling
    a trial again replaces its label.
    """
    case_id, idx = _trial(trial)
    Store(store, create=False).add_label(run, case_id, idx, verdict, note, dimension)
    what = f"{trial} ({dimension})" if dimension else trial
    click.echo(f"labelled {what} of run {run}: {verdict}")


def _fraction(value: float | None) -> str:
    return "n/a" if value is None else f"{value:.3f}"


@click.command("judge-agreement")
@click.argument("run")
@click.option(
    "--min-labels", default=MIN_LABELS, show_default=True, help="Labels needed to calibrate."
)
@click.option(
    "--min-agreement",
    default=MIN_AGREEMENT,
    show_default=True,
    help="Agreement to exceed to calibrate.",
)
@click.option("--store", type=click.Path(path_type=Path), default=DEFAULT_PATH, show_default=True)
@click.option("--json", "as_json", is_flag=True, help="Print the result as JSON.")
def judge_agreement(
    run: str, min_labels: int, min_agreement: float, store: Path, as_json: bool
) -> None:
    """Agreement and Cohen's kappa between the judge and human labels in RUN, per dimension.

    Also the judge's unknown rate, whether it is calibrated (at least
    --min-labels labels over every run in the store, agreement above
    --min-agreement: only then do its grades count), and the review queue:
    the unknown judge grades no human has labelled yet.
    """
    results = Store(store, create=False)
    if results.run(run) is None:
        raise ConfigError(f"no run {run!r} in {results.path}")
    everywhere = {(a.dimension, a.model, a.rubric_hash): a for a in agreements(results)}
    rows: list[dict[str, Any]] = []
    for here in agreements(results, run):
        overall = everywhere[(here.dimension, here.model, here.rubric_hash)]
        rows.append(
            {
                "dimension": here.dimension,
                "model": here.model,
                "rubric_hash": here.rubric_hash,
                "judged": here.judged,
                "labels": here.labels,
                "agreement": here.agreement,
                "kappa": here.kappa,
                "unknown_rate": here.unknown_rate,
                "calibrated": overall.calibrated(min_labels, min_agreement),
                "store_labels": overall.labels,
                "store_agreement": overall.agreement,
            }
        )
    queue = review_queue(results, run)
    if as_json:
        pending = [
            {
                "trial": f"{p.case_id}#{p.idx}",
                "dimension": p.dimension,
                "reason": p.reason,
                "cassette": p.cassette,
            }
            for p in queue
        ]
        click.echo(json.dumps({"run": run, "dimensions": rows, "review_queue": pending}, indent=2))
        return
    out = Console(highlight=False, soft_wrap=True)
    if not rows:
        out.print(f"run {run} has no judge grades (cases without a rubric, or --no-judge)")
        return
    table = Table(title=f"judge agreement, run {run}", title_justify="left")
    for column in ("dimension", "model", "judged", "labels", "agreement", "kappa", "unknown"):
        table.add_column(column, justify="left" if column in ("dimension", "model") else "right")
    table.add_column("status")
    for row in rows:
        status = "calibrated" if row["calibrated"] else "advisory"
        table.add_row(
            escape(row["dimension"]),
            escape(row["model"]),
            str(row["judged"]),
            str(row["labels"]),
            _fraction(row["agreement"]),
            _fraction(row["kappa"]),
            _fraction(row["unknown_rate"]),
            status,
        )
    out.print(table)
    for row in rows:
        if row["calibrated"]:
            out.print(f"{escape(row['dimension'])}: calibrated, its grades count")
        else:
            out.print(
                f"{escape(row['dimension'])}: advisory until {min_labels} labels agree above "
                f"{min_agreement:g} (every run in the store: {row['store_labels']} labels, "
                f"agreement {_fraction(row['store_agreement'])})"
            )
    if queue:
        out.print(f"\nreview queue: {len(queue)} unknown judge grade(s) to label")
        for p in queue:
            out.print(f"  {escape(p.case_id)}#{p.idx} {escape(p.dimension)}: {escape(p.reason)}")
        out.print(f"label one with: replay label {escape(run)} CASE#INDEX pass|fail")
