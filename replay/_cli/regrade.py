"""``replay regrade`` (grade stored trials again, block drift) and ``replay golden``."""

from __future__ import annotations

import json
from pathlib import Path

import click

from recorder import ConfigError
from replay import ExitCode, Regrade, Store, make_golden, regrade, regrade_golden
from replay.graders import Judge

from ..plugins import printable
from ..results import DEFAULT_PATH
from ..runs import MAX_DRIFT
from ..views import console, render_regrade


@click.command("regrade")
@click.argument("run", required=False)
@click.option("--golden", is_flag=True, help="Regrade every golden run against its labels.")
@click.option(
    "--grader", "graders", multiple=True, help="A grader added to every case's (repeatable)."
)
@click.option(
    "--case",
    "cases",
    multiple=True,
    type=click.Path(path_type=Path),
    help="The run's case files as they are now (default: where the run found them).",
)
@click.option("--against-labels", is_flag=True, help="Regrade only the labelled trials.")
@click.option(
    "--max-drift",
    default=MAX_DRIFT,
    show_default=True,
    type=click.FloatRange(0, 1),
    help="Exit 1 when more than this share of verdicts changed.",
)
@click.option("--store-as", help="Keep the regraded trials as a new run of this name.")
@click.option("--judge-url", help="Judge the rubric again here (default: keep the stored grades).")
@click.option("--judge-model", help="The judge's model (with --judge-url).")
@click.option("--judge-timeout", default=60.0, show_default=True, help="Seconds per judge call.")
@click.option("--store", type=click.Path(path_type=Path), default=DEFAULT_PATH, show_default=True)
@click.option("--json", "as_json", is_flag=True, help="Print the result as JSON.")
def regrade_command(
    run: str | None,
    golden: bool,
    graders: tuple[str, ...],
    cases: tuple[Path, ...],
    against_labels: bool,
    max_drift: float,
    store_as: str | None,
    judge_url: str | None,
    judge_model: str | None,
    judge_timeout: float,
    store: Path,
    as_json: bool,
) -> None:
    """Grade RUN's stored trials again with today's graders and report what moved.

    Nothing runs: each trial's cassette and recorded world changes are graded
    again (review mode), and its verdict compared with the stored one, per
    grader and per case, and with the human labels where there are any
    (precision and recall of each grader's pass). Exit 1 when more than
    --max-drift of the trials' verdicts changed (or, --against-labels, when
    the new verdicts agree with people on fewer trials), so CI blocks a grader
    change that silently moves scores; 3 when a trial could not be graded
    again (its cassette gone, damaged or cut short: they are listed); 0
    otherwise; 2 on bad input. Drift counts each trial's verdict: a grader
    that moves only on trials another grader fails shows in its row, not in
    the drift. --golden regrades every golden run (`replay golden`) against
    its labels.
    """
    if golden == (run is not None):
        raise ConfigError("give a RUN to regrade, or --golden (every golden run), not both")
    if golden and store_as:
        raise ConfigError("--store-as names one run: regrade a golden run by name to keep it")
    if bool(judge_url) != bool(judge_model):
        raise ConfigError("--judge-url and --judge-model go together")
    results = Store(store, create=False)
    judge = None
    if judge_url and judge_model:
        judge = Judge(judge_url, judge_model, judge_timeout)
    options = {"graders": graders, "cases": cases or None, "judge": judge, "max_drift": max_drift}
    done: list[Regrade]
    if run is None:
        done = regrade_golden(results, **options)
    else:
        only = against_labels
        done = [regrade(results, run, labels_only=only, store_as=store_as, **options)]  # type: ignore[arg-type]
    if as_json:
        click.echo(
            json.dumps([r.to_json() for r in done] if golden else done[0].to_json(), indent=2)
        )
    else:
        out = console()
        for result in done:
            render_regrade(result, out)
    if not all(r.passed for r in done):
        click.get_current_context().exit(ExitCode.FAILED)
    if not all(r.complete for r in done):
        click.get_current_context().exit(ExitCode.INCOMPLETE)


@click.command("golden")
@click.argument("run")
@click.option("--unset", is_flag=True, help="No longer golden.")
@click.option("--store", type=click.Path(path_type=Path), default=DEFAULT_PATH, show_default=True)
def golden_command(run: str, unset: bool, store: Path) -> None:
    """Mark RUN, a run with labels, as the graders' gold standard.

    `replay regrade --golden` regrades every golden run whenever grading
    changes; a grader change that moves its verdicts fails it.
    """
    labelled = make_golden(Store(store, create=False), run, not unset)
    if unset:
        click.echo(printable(f"run {run} is no longer golden"))
    else:
        click.echo(printable(f"run {run} is golden: {labelled} labelled trial(s)"))
