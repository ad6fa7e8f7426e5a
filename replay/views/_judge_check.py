"""A judge's bias probes in the terminal (``replay judge-check``)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from rich.console import Console
from rich.markup import escape
from rich.table import Table

from ._labels import fraction

if TYPE_CHECKING:  # (the runner is not imported to print what it returned)
    from ..runs import JudgeCheck


def render_judge_check(result: JudgeCheck, out: Console) -> None:
    """The judge against humans, each probe's flip rate with its interval, and the verdict."""
    dimensions = ", ".join(escape(name) for name in result.dimensions)
    out.print(
        f"judge {escape(result.model)} on {result.trials} labelled trial(s) of "
        f"{escape(', '.join(result.runs))} ({dimensions})"
    )
    out.print(
        f"against {result.labels} human label(s): kappa {fraction(result.kappa)}, "
        f"true-positive rate {fraction(result.tpr)}, true-negative rate "
        f"{fraction(result.tnr)}, unknown rate {fraction(result.unknown_rate)}"
    )
    table = Table(title="bias probes", title_justify="left")
    for column in ("probe", "status", "n", "flips", "unknown", "rate", "95% interval"):
        table.add_column(column, justify="left" if column in ("probe", "status") else "right")
    for probe in result.probes:
        interval = probe.interval
        table.add_row(
            escape(probe.name),
            escape(probe.status),
            str(probe.n),
            str(probe.flips) if probe.metric == "flip rate" else "",
            str(probe.unknown),
            fraction(probe.rate),
            "" if interval is None else f"{interval.low:.3f}-{interval.high:.3f}",
        )
    out.print(table)
    for probe in result.probes:
        if probe.note:
            out.print(f"{escape(probe.name)}: {escape(probe.status)}: {escape(probe.note)}")
    for why in result.skipped:
        out.print(f"skipped {escape(why)}")
    out.print(f"the judge's calls: {escape(result.cassettes)}")
    if result.passed and not result.measured:
        out.print("inconclusive: no probe could measure anything (see the notes above)")
        return
    if result.passed:
        out.print(f"passed: every probe measured at or under {result.max_flip:g}")
        return
    for line in result.reason.split("; "):
        out.print(f"failed: {escape(line)}")
    out.print("the judge stays advisory whatever its agreement (replay judge-agreement)")
