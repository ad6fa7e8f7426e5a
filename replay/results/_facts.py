"""What a report says of each trial, kept in the trial's row as it is written (store version 7).

A trial's primary failure cause and the line that says so (``TrialRecord.why_not_passed``)
and its partial credit (``TrialRecord.partial_credit``) come from its grades. A report
lists them for every trial (``--json``, failures by cause, partial credit's spread):
reading every grade of a 100,000-trial run to work them out costs seconds. So
``Store.add_trial`` writes them beside the trial's fields, in three columns of
``trials`` that are not a record's fields:

``failure``: the primary cause (``FailureCause``'s value; NULL for a pass); ``why``: the
line that says so (``""``: none; NULL for a pass); ``credit``: ``[share, held, failed]`` as
JSON (NULL: none recorded). An older store gains them, worked out from its trials' grades,
when it is opened.
"""

from __future__ import annotations

import functools
import json
import sqlite3
from collections.abc import Callable
from typing import Any

from ._record import FailureCause, PartialCredit, TrialRecord

COLUMNS = ("failure", "why", "credit")
"""The columns, after the record's own."""


def of(trial: TrialRecord) -> tuple[str | None, str | None, str | None]:
    """A trial's values for ``COLUMNS``."""
    why = trial.why_not_passed
    credit = trial.partial_credit
    text = (
        None
        if credit is None
        else json.dumps([float(credit.share), list(credit.held), list(credit.failed)])
    )
    return (None, None, text) if why is None else (why[0].value, why[1], text)


def create(conn: sqlite3.Connection) -> None:
    """Add the columns where missing (in the caller's transaction)."""
    have = {row[1] for row in conn.execute("PRAGMA table_info(trials)")}
    for column in COLUMNS:
        if column not in have:
            conn.execute(f"ALTER TABLE trials ADD COLUMN {column} TEXT")


def fill(
    conn: sqlite3.Connection, read: Callable[[sqlite3.Connection, str, str], list[TrialRecord]]
) -> None:
    """Work the columns out for every stored trial (a store before version 7)."""
    for run, case_id in conn.execute("SELECT DISTINCT run, case_id FROM trials").fetchall():
        conn.executemany(
            "UPDATE trials SET failure = ?, why = ?, credit = ? "
            "WHERE run = ? AND case_id = ? AND idx = ?",
            [(*of(t), run, case_id, t.idx) for t in read(conn, run, case_id)],
        )


@functools.lru_cache(maxsize=4096)
def cause(value: str) -> FailureCause:
    """A ``failure`` column's cause."""
    return FailureCause(value)


@functools.lru_cache(maxsize=4096)
def credit(text: str) -> PartialCredit:
    """A ``credit`` column's partial credit (a run repeats them: each text is read once)."""
    share, held, failed = json.loads(text)
    return PartialCredit(share, tuple(held), tuple(failed))


def credit_json(text: str | None) -> dict[str, Any] | None:
    """A ``credit`` column as ``report_json`` gives a trial's ``partial_credit``."""
    if text is None:
        return None
    found = credit(text)
    return {"share": found.share, "held": list(found.held), "failed": list(found.failed)}
