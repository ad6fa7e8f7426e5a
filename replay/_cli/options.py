"""Options the statistical commands share (report, diff, gate, plan, noise)."""

from __future__ import annotations

import click

unit_interval = click.FloatRange(0.0, 1.0, min_open=True, max_open=True)
"""A value strictly between 0 and 1 (a confidence, a power, a rate of false discoveries)."""

confidence_option = click.option(
    "--confidence",
    type=unit_interval,
    default=0.95,
    show_default=True,
    help="Confidence of every interval.",
)
fdr_option = click.option(
    "--fdr",
    type=unit_interval,
    default=0.1,
    show_default=True,
    help="False discovery rate (Benjamini-Hochberg) at which cases are marked better or worse.",
)
power_option = click.option(
    "--power",
    type=unit_interval,
    default=0.8,
    show_default=True,
    help="Power at which the smallest detectable change is stated.",
)
k_option = click.option(
    "--k",
    type=click.IntRange(min=1),
    help="The pass^k compared beside pass^1  [default: the most trials every case has].",
)
