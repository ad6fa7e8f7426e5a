"""``replay diff A B``: two cassettes (``replay.diff_cassettes``) or two runs (``diff_runs``)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import click
from rich.console import Console
from rich.markup import escape
from rich.table import Table

from recorder import read_cassette
from replay import CaseChange, CassetteDiff, Store, diff_cassettes, diff_runs

from ..results._store import DEFAULT_PATH


@click.command()
@click.argument("a")
@click.argument("b")
@click.option("--store", type=click.Path(path_type=Path), default=DEFAULT_PATH, show_default=True)
@click.option("--json", "as_json", is_flag=True, help="Print the diff as JSON.")
def diff(a: str, b: str, store: Path, as_json: bool) -> None:
    """Compare A and B: two cassette files, or two run names in the store.

    Cassettes: the first step where the tool calls diverge and why (another
    tool, other arguments, one stopped), then the rows one trial changed and
    the other did not, then the final answers. Runs: per case, pass rates
    side by side, the change, whether it is larger than noise (two-proportion
    test), and the cases that newly fail with a failing trial to read.
    """
    out = Console(highlight=False, soft_wrap=True)
    if Path(a).is_file() and Path(b).is_file():
        result = diff_cassettes(read_cassette(a), read_cassette(b))
        if as_json:
            click.echo(json.dumps(_cassettes_json(result), indent=2, default=str))
            return
        if result.same:
            out.print("same decisions, same world changes, same answer")
            return
        out.print(
            f"[bold]first divergence[/] {escape(result.divergence.describe())}"
            if result.divergence
            else "same tool calls"
        )
        for line in result.state:
            out.print(f"  [yellow]~[/] {escape(line)}")
        if result.answers:
            out.print(f"answer A: {escape(str(result.answers[0]))}")
            out.print(f"answer B: {escape(str(result.answers[1]))}")
        return
    changes = diff_runs(Store(store, create=False), a, b)
    if as_json:
        click.echo(json.dumps([_change_json(c) for c in changes], indent=2))
        return
    table = Table(
        "case",
        f"{a} pass^1",
        f"{b} pass^1",
        "change",
        "p",
        "pass^k A -> B",
        title=f"{a} -> {b}",
        title_justify="left",
    )
    for c in changes:
        k = f"k={c.pass_k[0]}: {_num(c.pass_k[1])} -> {_num(c.pass_k[2])}" if c.pass_k else "-"
        mark = " [red]worse[/]" if c.significant and (c.change or 0) < 0 else ""
        mark = " [green]better[/]" if c.significant and (c.change or 0) > 0 else mark
        change = "-" if c.change is None else f"{c.change:+.3f}"
        table.add_row(
            escape(c.case_id), _num(c.pass1_a), _num(c.pass1_b), change + mark, _num(c.p_value), k
        )
    out.print(table)
    newly = [c for c in changes if c.newly_failing]
    for c in newly:
        out.print(f"newly failing: {escape(c.case_id)}  read: replay show {c.failing_cassette}")
    if not newly:
        out.print("no case newly fails")


def _num(value: float | None) -> str:
    return "-" if value is None else f"{value:.3f}"


def _cassettes_json(result: CassetteDiff) -> dict[str, Any]:
    d = result.divergence
    return {
        "same": result.same,
        "divergence": None
        if d is None
        else {"step": d.step, "kind": d.kind, "a": d.a, "b": d.b, "arguments": d.arguments},
        "state": result.state,
        "answers": list(result.answers) if result.answers else None,
    }


def _change_json(c: CaseChange) -> dict[str, Any]:
    return {
        "case": c.case_id,
        "a": {"n": c.a.n, "c": c.a.c, "pass1": c.pass1_a, "verdicts": dict(c.a.verdicts)},
        "b": {"n": c.b.n, "c": c.b.c, "pass1": c.pass1_b, "verdicts": dict(c.b.verdicts)},
        "change": c.change,
        "p_value": c.p_value,
        "significant": c.significant,
        "pass_k": list(c.pass_k) if c.pass_k else None,
        "newly_failing": c.newly_failing,
        "failing_cassette": c.failing_cassette,
    }
