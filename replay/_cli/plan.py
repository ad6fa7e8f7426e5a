"""``replay plan``: how many cases and trials a comparison needs (``replay.plan``)."""

from __future__ import annotations

import json
from dataclasses import asdict
from pathlib import Path

import click

from recorder import ConfigError
from replay import Plan, Store, plan

from ..results import DEFAULT_PATH
from .options import confidence_option, power_option, unit_interval


@click.command("plan")
@click.argument("run", required=False)
@click.option("--baseline", help="Plan from a pair of runs: the baseline (with --candidate).")
@click.option("--candidate", help="Plan from a pair of runs: the candidate (with --baseline).")
@click.option(
    "--pass-rate", type=click.FloatRange(0.0, 1.0), help="Plan without a run: every case's rate."
)
@click.option("--cases", type=click.IntRange(min=2), help="Plan without a run: the cases.")
@click.option(
    "--trials", type=click.IntRange(min=1), help="Plan without a run: trials per case [default: 8]."
)
@click.option(
    "--detect",
    type=unit_interval,
    default=0.05,
    show_default=True,
    help="The drop to detect (0.05: 5 points of pass^1 or pass^k).",
)
@click.option("--k", type=click.IntRange(min=1), help="The pass^k planned beside pass^1.")
@power_option
@confidence_option
@click.option("--store", type=click.Path(path_type=Path), default=DEFAULT_PATH, show_default=True)
@click.option("--json", "as_json", is_flag=True, help="Print the plan as JSON.")
def plan_command(
    run: str | None,
    baseline: str | None,
    candidate: str | None,
    pass_rate: float | None,
    cases: int | None,
    trials: int | None,
    detect: float,
    k: int | None,
    power: float,
    confidence: float,
    store: Path,
    as_json: bool,
) -> None:
    """How many cases and trials per case a paired comparison needs to see a drop.

    From RUN: its cases' pass rates (a drop shared by all cases is assumed;
    one concentrated in a few needs more). From --baseline A --candidate B:
    both runs, and how unevenly the change spreads over cases. Without a
    run: --pass-rate P --cases N [--trials K]. Prints, for pass^1 and
    pass^k, the smallest drop the runs as they are can detect, then the
    cases needed at 1, 2, 4, 8... trials per case to detect --detect.
    """
    if (baseline is None) != (candidate is None):
        raise ConfigError("give --baseline and --candidate together (or a RUN)")
    if run is not None and baseline is not None:
        raise ConfigError("give a RUN or --baseline/--candidate, not both")
    if (run or baseline) is not None and (pass_rate, cases, trials) != (None, None, None):
        raise ConfigError("--pass-rate, --cases and --trials plan without a run: drop the run")
    if (run or baseline) is None and (pass_rate is None or cases is None):
        raise ConfigError(
            "plan from a run (RUN), a pair (--baseline A --candidate B), or assumptions "
            "(--pass-rate P --cases N)"
        )
    results = Store(store, create=False) if (run or baseline) is not None else None
    try:
        result = plan(
            results,
            run or baseline,
            candidate=candidate,
            pass_rate=pass_rate,
            cases=cases,
            trials=trials,
            k=k,
            detect=detect,
            power=power,
            confidence=confidence,
        )
    except ValueError as exc:
        raise ConfigError(str(exc)) from None
    if as_json:
        click.echo(json.dumps(asdict(result), indent=2))
        return
    render_plan(result)


def render_plan(result: Plan) -> None:
    """The plan as lines: what the runs detect now, then cases needed per trials."""
    click.echo(
        f"plan from {result.source}: {result.cases} cases x {result.trials} trials; a paired "
        f"comparison at {result.confidence:.0%} confidence and {result.power:.0%} power"
    )
    for figure in result.figures:
        now = (
            f"{result.cases} cases x {result.trials} trials detect a drop of "
            f"{figure.detectable:.3f} or more"
            if figure.detectable is not None
            else f"{result.trials} trials per case are too few for {figure.name}"
        )
        click.echo(f"{figure.name}: {now}")
        needs = "  ".join(
            f"{row.trials} trials: {row.cases} cases"
            + (" (now)" if row.trials == result.trials else "")
            for row in figure.needs
        )
        click.echo(f"  to detect a drop of {result.detect}: {needs}")
        if figure.spread:
            click.echo(f"  (the change spreads unevenly over cases: tau^2 {figure.spread:.4f})")
    click.echo(
        f"if every trial passes, {result.zero_failure_trials} trials bound a case's failure rate "
        f"below {result.detect} ({result.confidence:.0%}, one-sided)"
    )
