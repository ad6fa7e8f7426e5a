"""What a regrade moved, in the terminal (``replay regrade``)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from rich.console import Console
from rich.markup import escape
from rich.table import Table

from ._labels import fraction

if TYPE_CHECKING:  # (the runner is not imported to print what it returned)
    from ..runs import Regrade


def render_regrade(result: Regrade, out: Console) -> None:
    """Verdicts changed per grader and per case, against labels, and the trials that moved."""
    run = escape(result.run)
    which = " (the labelled trials)" if result.labels_only else ""
    out.print(
        f"regraded run {run}{which}: {result.regraded} trial(s), {len(result.changes)} "
        f"verdict(s) changed ({result.drift:.1%}; at most {result.max_drift:.1%} allowed)"
    )
    if result.graders:
        table = Table(title="per grader", title_justify="left")
        for column in ("grader", "graded", "changed", "labelled"):
            table.add_column(column, justify="left" if column == "grader" else "right")
        for column in ("precision", "recall"):
            table.add_column(f"{column} (was)", justify="right")
        for g in result.graders:
            table.add_row(
                escape(g.grader),
                str(g.graded),
                str(g.changed),
                str(g.labelled),
                f"{fraction(g.precision)} ({fraction(g.precision_before)})",
                f"{fraction(g.recall)} ({fraction(g.recall_before)})",
            )
        out.print(table)
    moved = {case: counts for case, counts in result.cases.items() if counts[0]}
    for case, (changed, trials) in moved.items():
        out.print(f"case {escape(case)}: {changed} of {trials} verdict(s) changed")
    for c in result.changes:
        why = ", ".join(
            f"{escape(g.grader)} {_name(g.before)} -> {_name(g.after)}" for g in c.graders
        )
        label = f"; people said {c.label.value}" if c.label else ""
        out.print(
            f"changed: {escape(c.case_id)}#{c.idx} {c.before.value} -> {c.after.value}"
            f" ({why or 'no grade moved: the verdict is combined otherwise'}){label}"
        )
    for trial, why in result.skipped:
        out.print(f"skipped: {escape(trial)}: {escape(why)}")
    if result.unrecorded:
        out.print(
            f"never recorded (they could not run; nothing to grade): "
            f"{escape(', '.join(result.unrecorded))}"
        )
    if result.stored_as:
        out.print(f"stored as run {escape(result.stored_as)}")
    if result.drifted:
        out.print(
            f"DRIFT: {len(result.changes)} of {result.regraded} verdicts changed "
            f"({result.drift:.1%} > {result.max_drift:.1%})"
        )
    elif result.fewer_agree:
        out.print("WORSE: the regraded verdicts agree with the labels on fewer trials")
    elif not result.complete:
        what = f"{len(result.skipped)} trial(s) skipped" if result.skipped else "no trial"
        out.print(f"INCOMPLETE: {what} could not be graded again; within the drift for the rest")
    else:
        out.print("within the drift allowed")


def _name(verdict: object) -> str:
    return str(getattr(verdict, "value", "none"))
