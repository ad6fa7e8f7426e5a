"""What people and judges said of trials, in the terminal.

The judge against people; people against each other.
"""

from __future__ import annotations

from rich.console import Console
from rich.markup import escape
from rich.table import Table

from ..results import JudgeAgreement, LabelAgreement


def render_judge_agreement(result: JudgeAgreement, out: Console) -> None:
    """The judge's agreement with human labels, per dimension, and the review queue."""
    run, rows, queue = result.run, result.dimensions, result.review_queue
    min_labels, min_agreement = result.min_labels, result.min_agreement
    if not rows:
        out.print(f"run {run} has no judge grades (cases without a rubric, or --no-judge)")
        return
    table = Table(title=f"judge agreement, run {run}", title_justify="left")
    for column in ("dimension", "model", "judged", "labels", "agreement", "kappa", "unknown"):
        table.add_column(column, justify="left" if column in ("dimension", "model") else "right")
    table.add_column("status")
    for row in rows:
        status = "calibrated" if row["calibrated"] else "advisory"
        table.add_row(
            escape(row["dimension"]),
            escape(row["model"]),
            str(row["judged"]),
            str(row["labels"]),
            fraction(row["agreement"]),
            fraction(row["kappa"]),
            fraction(row["unknown_rate"]),
            status,
        )
    out.print(table)
    for row in rows:
        if row["calibrated"]:
            out.print(f"{escape(row['dimension'])}: calibrated, its grades count")
        elif (row.get("judge_check") or {}).get("passed") is False and row.get("advisory"):
            out.print(f"{escape(row['dimension'])}: {escape(row['advisory'])}")
        else:
            out.print(
                f"{escape(row['dimension'])}: advisory until {min_labels} labels agree above "
                f"{min_agreement:g} (every run in the store: {row['store_labels']} labels, "
                f"agreement {fraction(row['store_agreement'])})"
            )
    if queue:
        out.print(f"\nreview queue: {len(queue)} unknown judge grade(s) to label")
        for p in queue:
            out.print(f"  {escape(p.case_id)}#{p.idx} {escape(p.dimension)}: {escape(p.reason)}")
        out.print(f"label one with: replay label {escape(run)} CASE#INDEX pass|fail")
    people = result.people
    if people is not None and people.units:
        kappa = f", kappa {fraction(people.kappa)}" if len(people.labellers) == 2 else ""
        out.print(
            f"people: {len(people.labellers)} labellers agree on "
            f"{people.units - len(people.disagreements)} of {people.units} trial(s) they both "
            f"labelled{kappa}, alpha {fraction(people.alpha)} "
            f"(replay label-agreement {escape(run)} lists where they differ)"
        )


def render_label_agreement(result: LabelAgreement, out: Console) -> None:
    """How far a run's labellers agree, and the trials they disagree on."""
    names = ", ".join(escape(who or "(unnamed)") for who in result.labellers) or "nobody"
    out.print(f"labels of run {escape(result.run)}: by {names}")
    if result.units == 0:
        out.print(
            "no trial was labelled pass or fail by two people: label the same trials with "
            f"replay label {escape(result.run)} CASE#INDEX pass|fail --by NAME"
        )
        return
    kappa = f", Cohen's kappa {fraction(result.kappa)}" if len(result.labellers) == 2 else ""
    out.print(
        f"{result.units} trial(s) labelled by two or more: agreement "
        f"{fraction(result.agreement)}{kappa}, Krippendorff's alpha {fraction(result.alpha)}"
    )
    if not result.disagreements:
        out.print("no disagreement")
        return
    out.print(f"\n{len(result.disagreements)} trial(s) people disagree on (ambiguous tasks?):")
    for d in result.disagreements:
        said = ", ".join(f"{escape(who or '(unnamed)')} {v.value}" for who, v in d.labels.items())
        where = f" {escape(d.dimension)}" if d.dimension else ""
        out.print(f"  {escape(d.case_id)}#{d.idx}{where}: {said}")
        for who, note in d.notes.items():
            out.print(f"    {escape(who or '(unnamed)')}: {escape(note)}")


def fraction(value: float | None) -> str:
    """A share or a coefficient to three places; ``n/a`` when there is none."""
    return "n/a" if value is None else f"{value:.3f}"
