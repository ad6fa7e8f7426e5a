"""``replay label``, ``replay judge-agreement`` and ``replay label-agreement``.

A human verdict beside a trial; the judge against people; people against each other.
"""

from __future__ import annotations

import json
from pathlib import Path

import click

from recorder import ConfigError
from replay import Store, judge_agreement, label_agreement

from ..plugins import printable
from ..results import DEFAULT_PATH, MIN_AGREEMENT, MIN_LABELS
from ..views import console, render_judge_agreement, render_label_agreement


def _trial(text: str) -> tuple[str, int]:
    case_id, sep, idx = text.rpartition("#")
    if not sep or not case_id or not idx.isdigit():
        raise ConfigError(f"trial {text!r} is not CASE#INDEX (e.g. refund-4812#0)")
    return case_id, int(idx)


@click.command()
@click.argument("run")
@click.argument("trial")
@click.argument("verdict", type=click.Choice(["pass", "fail", "unsure"]))
@click.option("--note", default="", help="Why (kept with the label).")
@click.option("--dimension", default="", help="Label one judged dimension (default: the trial).")
@click.option("--by", "labeller", default="", help="Who labels (two people: see label-agreement).")
@click.option("--store", type=click.Path(path_type=Path), default=DEFAULT_PATH, show_default=True)
def label(
    run: str, trial: str, verdict: str, note: str, dimension: str, labeller: str, store: Path
) -> None:
    """Store a human VERDICT (pass, fail or unsure) for TRIAL (CASE#INDEX) of RUN.

    Labels calibrate the LLM judge (see `replay judge-agreement`) and are the
    gold standard `replay regrade --against-labels` measures graders on. Give
    --by NAME when more than one person labels: each keeps their own label
    (`replay label-agreement` compares them). Labelling a trial again replaces
    that person's label; an unsure label is kept and compared with nothing.
    """
    case_id, idx = _trial(trial)
    Store(store, create=False).add_label(run, case_id, idx, verdict, note, dimension, labeller)
    what = f"{trial} ({dimension})" if dimension else trial
    who = f" by {labeller}" if labeller else ""
    click.echo(printable(f"labelled {what} of run {run}{who}: {verdict}"))


@click.command("label-agreement")
@click.argument("run")
@click.option("--store", type=click.Path(path_type=Path), default=DEFAULT_PATH, show_default=True)
@click.option("--json", "as_json", is_flag=True, help="Print the result as JSON.")
def label_agreement_command(run: str, store: Path, as_json: bool) -> None:
    """How far the people who labelled RUN agree, and the trials they disagree on.

    Cohen's kappa when two people labelled (--by), Krippendorff's alpha for
    any number; pass and fail labels only (unsure ones are left out). A trial
    people disagree on is an ambiguous task: `replay suite-health` flags its case.
    """
    result = label_agreement(Store(store, create=False), run)
    if as_json:
        click.echo(json.dumps(result.to_json(), indent=2))
        return
    render_label_agreement(result, console())


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
def judge_agreement_command(
    run: str, min_labels: int, min_agreement: float, store: Path, as_json: bool
) -> None:
    """Agreement and Cohen's kappa between the judge and human labels in RUN, per dimension.

    Also the judge's unknown rate, whether it is calibrated (at least
    --min-labels labels over every run in the store, agreement above
    --min-agreement: only then do its grades count), and the review queue:
    the unknown judge grades no human has labelled yet.
    """
    result = judge_agreement(
        Store(store, create=False), run, min_labels=min_labels, min_agreement=min_agreement
    )
    if as_json:
        click.echo(json.dumps(result.to_json(), indent=2))
        return
    render_judge_agreement(result, console())
