"""``replay report RUN``: pass@k / pass^k per case and for the suite, and why trials failed."""

from __future__ import annotations

from pathlib import Path

import click

from replay import Store, build_report

from ..results import DEFAULT_PATH, report_json_text, write_whole
from ..views import console, render_report
from .options import confidence_option


@click.command()
@click.argument("run")
@click.option("--store", type=click.Path(path_type=Path), default=DEFAULT_PATH, show_default=True)
@click.option("--json", "as_json", is_flag=True, help="Print the report as JSON.")
@click.option(
    "--html",
    "html_file",
    type=click.Path(dir_okay=False, path_type=Path),
    help="Write the report as one self-contained HTML page (summary, cases, transcripts).",
)
@confidence_option
def report(run: str, store: Path, as_json: bool, html_file: Path | None, confidence: float) -> None:
    """Report RUN: per case n, c, pass^1, pass^k and verdicts; suite pass^k; failures.

    Every figure has an interval (--confidence). A case's is Wilson's on its
    trials. A suite figure's is over cases: it estimates the figure for cases
    like these, so 20 cases leave it wide however many trials each ran, and
    the clustered standard error of pass^1 stands beside the one trials
    counted as independent would give (too small).

    Cases come worst first. The trials that did not pass are listed by
    cause (assertion failed, rule veto, judge unknown, agent error, timeout,
    limit, sandbox violation, unsupported, infrastructure), with counts,
    then each case's evidence. unknown, unsupported and error trials are
    counted and shown, and kept out of the pass rates. With --html, writes
    the viewer page instead of printing the table.
    """
    if html_file is not None and as_json:
        raise click.UsageError("--html and --json cannot be used together")
    results = Store(store, create=False)
    with results.snapshot():  # (a run still writing: its counts and trials agree)
        if html_file is not None:
            from replay import run_html  # (the page's transcripts read cassettes: not for a table)

            _write(html_file, run_html(results, run, confidence=confidence))
            return
        result = build_report(results, run, confidence=confidence)
        if as_json:  # (written as it goes: a 100,000-trial run's JSON is tens of MB)
            report_json_text(result, lambda text: click.echo(text, nl=False))
            click.echo()
            return
        render_report(result, console())


def _write(path: Path, page: str) -> None:
    write_whole(path, page)
    click.echo(f"wrote {path}")
