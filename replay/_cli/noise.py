"""``replay noise A B``: the run-to-run noise of a suite (``replay.noise``)."""

from __future__ import annotations

import json
from dataclasses import asdict
from pathlib import Path

import click
from rich.markup import escape

from replay import NoiseFloor, Store, noise

from ..results import DEFAULT_PATH
from ..views import console
from .options import confidence_option

SHOWN = 10
"""Cases listed with the largest changes."""


@click.command("noise")
@click.argument("a")
@click.argument("b")
@confidence_option
@click.option("--store", type=click.Path(path_type=Path), default=DEFAULT_PATH, show_default=True)
@click.option("--json", "as_json", is_flag=True, help="Print the noise floor as JSON.")
def noise_command(a: str, b: str, confidence: float, store: Path, as_json: bool) -> None:
    """The noise floor of a suite: how two runs of one version A and B differ by chance.

    Run the same agent version twice, then this, once: it prints each suite
    figure in both runs with the interval of its change, the change a
    comparison of this suite must exceed to mean anything, how many cases
    flip between the runs, and the cases that moved most.
    """
    result = noise(Store(store, create=False), a, b, confidence=confidence)
    if as_json:
        click.echo(json.dumps(asdict(result) | {"floor": result.floor}, indent=2))
        return
    render_noise(result, confidence)


def render_noise(result: NoiseFloor, confidence: float) -> None:
    """The noise floor as lines."""
    out = console()
    out.print(
        f"noise between {escape(result.a)} and {escape(result.b)}: "
        f"{len(result.cases)} cases graded in both"
    )
    if result.pins:
        changed = "; ".join(f"{k} ({v})" for k, v in result.pins.items())
        out.print(
            f"[yellow]warning[/]: the runs differ in their pins, not one version: {escape(changed)}"
        )
    for figure in result.figures:
        out.print(
            f"suite {figure.name} {figure.a:.3f} -> {figure.b:.3f}: change {figure.change:+.3f}, "
            f"{confidence:.0%} interval [{figure.interval.low:+.3f}, {figure.interval.high:+.3f}]"
        )
    if result.floor is not None:
        out.print(
            f"noise floor: a change of suite pass^1 within +/-{result.floor:.3f} is noise for "
            "this suite at these trials"
        )
    out.print(
        f"cases whose pass^1 differs: {len(result.flipped)} of {len(result.cases)}; "
        f"whose every trial passed in one run only: {len(result.all_pass_flipped)}"
    )
    if result.cases:
        expected = sum(c.expected for c in result.cases) / len(result.cases)
        out.print(
            f"per-case change of pass^1: sd {result.spread:.3f} (trial noise alone: about "
            f"{expected:.3f} on average)"
        )
    moved = [c for c in result.cases if c.change][:SHOWN]
    if moved:
        listed = ", ".join(f"{escape(c.case_id)} {c.pass1_a:.2f} -> {c.pass1_b:.2f}" for c in moved)
        out.print(f"moved most: {listed}")
