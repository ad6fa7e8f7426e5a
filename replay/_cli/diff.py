"""``replay diff A B``: two cassettes (``replay.diff_cassettes``) or two runs (``diff_runs``)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import click

from recorder import read_cassette
from replay import CaseChange, CassetteDiff, RunComparison, Store, compare_runs, diff_cassettes

from ..results import DEFAULT_PATH
from ..views import console, render_cassette_diff, render_run_diff
from .options import confidence_option, fdr_option, k_option, power_option


@click.command()
@click.argument("a")
@click.argument("b")
@click.option("--store", type=click.Path(path_type=Path), default=DEFAULT_PATH, show_default=True)
@click.option("--json", "as_json", is_flag=True, help="Print the diff as JSON.")
@confidence_option
@fdr_option
@power_option
@k_option
def diff(
    a: str,
    b: str,
    store: Path,
    as_json: bool,
    confidence: float,
    fdr: float,
    power: float,
    k: int | None,
) -> None:
    """Compare A and B: two cassette files, or two run names in the store.

    Cassettes: the first step where the tool calls diverge and why (another
    tool, other arguments, one stopped), its step numbered as `replay show`
    numbers each trial's steps, then the rows one trial changed and
    the other did not, then the final answers.

    Runs, paired by case (cases in one run only are listed apart): per case,
    the pass rates side by side, the change, Fisher's exact p and its
    Benjamini-Hochberg q; a case is marked better or worse when q <= --fdr.
    Then the suite's pass^1 and pass^k in both runs with the interval of
    their paired change and the smallest change the runs could detect, and
    the cases that newly fail with a failing trial to read.
    """
    out = console()
    if Path(a).is_file() and Path(b).is_file():
        result = diff_cassettes(read_cassette(a), read_cassette(b))
        if as_json:
            click.echo(json.dumps(_cassettes_json(result), indent=2, default=str))
            return
        render_cassette_diff(result, out)
        return
    comparison = compare_runs(
        Store(store, create=False), a, b, confidence=confidence, fdr=fdr, power=power, k=k
    )
    if as_json:
        click.echo(json.dumps(comparison_json(comparison), indent=2))
        return
    render_run_diff(comparison, out)


def _cassettes_json(result: CassetteDiff) -> dict[str, Any]:
    d = result.divergence
    return {
        "same": result.same,
        "divergence": None
        if d is None
        else {
            "call": d.call,
            "step_a": d.step_a,
            "step_b": d.step_b,
            "kind": d.kind,
            "a": d.a,
            "b": d.b,
            "arguments": d.arguments,
        },
        "state": result.state,
        "answers": list(result.answers) if result.answers else None,
    }


def comparison_json(comparison: RunComparison) -> dict[str, Any]:
    """A paired comparison as JSON-ready data (``replay diff --json``)."""
    return {
        "a": comparison.a,
        "b": comparison.b,
        "confidence": comparison.confidence,
        "power": comparison.power,
        "fdr": comparison.fdr,
        "trials": comparison.trials,
        "suite": [
            {
                "figure": f.name,
                "k": f.k,
                "cases": f.cases,
                "a": f.a,
                "b": f.b,
                "change": f.change,
                "interval": list(f.interval),
                "detectable": f.detectable,
            }
            for f in comparison.figures
        ],
        "only_a": list(comparison.only_a),
        "only_b": list(comparison.only_b),
        "cases": [_change_json(c) for c in comparison.changes],
    }


def _change_json(c: CaseChange) -> dict[str, Any]:
    return {
        "case": c.case_id,
        "a": {"n": c.a.n, "c": c.a.c, "pass1": c.pass1_a, "verdicts": dict(c.a.verdicts)},
        "b": {"n": c.b.n, "c": c.b.c, "pass1": c.pass1_b, "verdicts": dict(c.b.verdicts)},
        "change": c.change,
        "p_value": c.p_value,
        "q_value": c.q_value,
        "direction": c.direction,
        "pass_k": list(c.pass_k) if c.pass_k else None,
        "newly_failing": c.newly_failing,
        "failing_cassette": c.failing_cassette,
    }
