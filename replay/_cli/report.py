"""``replay report RUN``: pass@k / pass^k per case and for the suite, and why trials failed."""

from __future__ import annotations

import json
from pathlib import Path

import click
from rich.console import Console
from rich.markup import escape
from rich.table import Table

from replay import Store, build_report, report_json, run_html

from ..results._store import DEFAULT_PATH


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
def report(run: str, store: Path, as_json: bool, html_file: Path | None) -> None:
    """Report RUN: per case n, c, pass^1, pass^k and verdicts; suite pass^k; failures.

    unknown, unsupported and error trials are counted and shown, and kept
    out of the pass rates. With --html, writes the viewer page instead of
    printing the table.
    """
    if html_file is not None and as_json:
        raise click.UsageError("--html and --json cannot be used together")
    results = Store(store, create=False)
    if html_file is not None:
        _write(html_file, run_html(results, run))
        return
    result = build_report(results, run)
    if as_json:
        click.echo(json.dumps(report_json(result), indent=2))
        return
    out = Console(highlight=False, soft_wrap=True)
    kmax = max((c.metrics.counts.n for c in result.cases), default=0)
    columns = [
        "case",
        "suite",
        "n",
        "c",
        "pass^1",
        *([f"pass^{kmax}"] if kmax > 1 else []),
        "verdicts",
    ]
    table = Table(title=f"run {run}", title_justify="left")
    for column in columns:
        table.add_column(
            column, justify="left" if column in ("case", "suite", "verdicts") else "right"
        )
    for case in result.cases:
        counts, metrics = case.metrics.counts, case.metrics
        verdicts = ", ".join(f"{v} {n}" for v, n in counts.verdicts.items() if n)
        table.add_row(
            escape(case.case_id),
            case.suite,
            str(counts.n),
            str(counts.c),
            _num(metrics.pass_hat.get(1)),
            *([_num(metrics.pass_hat.get(kmax))] if kmax > 1 else []),
            verdicts,
        )
    out.print(table)
    suite = result.suite
    graded = len(result.cases) - len(suite.excluded)
    # Only the k every graded case reaches: past it, means over fewer cases could rise with k.
    ks = [k for k in sorted(suite.pass_hat) if suite.cases_used.get(k, 0) == graded]
    if ks:
        out.print("suite pass^k: " + "  ".join(f"k={k} {_num(suite.pass_hat[k])}" for k in ks))
        out.print("suite pass@k: " + "  ".join(f"k={k} {_num(suite.pass_at[k])}" for k in ks))
    else:
        out.print("no trial passed or failed: every one was unknown, unsupported or error")
    if suite.pass1_ci:
        low, high = suite.pass1_ci
        out.print(f"pass^1 95% interval: {low:.3f} - {high:.3f}")
    totals = ", ".join(f"{v} {n}" for v, n in suite.totals.items() if n)
    out.print(f"trials: {totals}")
    use = result.tool_use
    accuracy = [
        f"{label} {_num(value)}"
        for label, value in (
            ("tool selection", use.selection),
            ("arguments", use.arguments),
            ("abstention", use.abstention),
        )
        if value is not None
    ]
    spread = ", ".join(
        f"{name.replace('_', ' ')} p50 {_short(p50)} p95 {_short(p95)}"
        for name, (p50, p95) in use.percentiles.items()
        if p50 is not None
    )
    out.print(f"tool use: {', '.join(accuracy) or 'no reference solution'}; loops {use.loops}")
    if spread:
        out.print(f"per trial: {spread}")
    if use.unknown_usage:
        out.print(f"tokens unknown in {use.unknown_usage} trials (calls that reported no usage)")
    for case in result.cases:
        if case.failures:
            out.print(f"\n[bold]{escape(case.case_id)}[/] failed because:")
            for line, times in case.failures:
                out.print(f"  {times} x {escape(line)}")
            if case.failing_cassette:
                out.print(f"  read: replay show {escape(case.failing_cassette)}")
    for case in result.cases:
        if case.user_failures:
            out.print(
                f"\n[bold]{escape(case.case_id)}[/]: the simulated user failed "
                "(error trials, not counted against the agent):"
            )
            for line, times in case.user_failures:
                out.print(f"  {times} x {escape(line)}")


def _num(value: float | None) -> str:
    return "-" if value is None else f"{value:.3f}"


def _write(path: Path, page: str) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(page, encoding="utf-8")
    click.echo(f"wrote {path}")


def _short(value: float | None) -> str:
    if value is None:
        return "-"
    return f"{value:.0f}" if float(value).is_integer() else f"{value:.3g}"
