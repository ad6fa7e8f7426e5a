"""Per-case summaries, kept by the store as trials are written: what reports count.

A run's reports (``replay report``, ``gate``, ``diff``, ``view``) count per case: trials by
verdict, agent failures, failure causes, guards, each grader's verdicts, the evidence of
what did not pass. Counting them over every trial of a 100,000-trial run costs seconds;
so ``Store.add_trial`` adds each trial's counts to the ``case_summaries`` table in the
trial's own transaction, and a report reads a few rows a case.

A row is one tally: ``(run, case_id, kind, key) -> n``, with ``first``, where in the
case's trials the key was first seen (so a report lists ties as counting the trials in
order would: a line first seen first). A trial replaced takes its old counts away first;
when that leaves a ``first`` it may have set, the case is counted again from its trials.
"""

from __future__ import annotations

import json
import sqlite3
from collections import Counter
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass

from ..graders import AGENT_CAUSES, Cause, Verdict
from ..modes import Guard
from ._record import FailureCause, TrialRecord

SUMMARIES = "case_summaries"
"""The table."""

VERDICT, FAILED, CAUSE, GUARD, GRADER, EVIDENCE, USER = (
    "verdict",
    "failed",
    "cause",
    "guard",
    "grader",
    "evidence",
    "user",
)
"""The kinds of tally: a verdict's trials; the agent's failures (``TrialRecord.failed``);
a failure cause's trials; a limit's trials; a grader's grades of a verdict (key
``grader<TAB>verdict``); a line of evidence of what did not pass (the agent's, a limit's,
the harness's or a grade's); a line of the simulated user's failures."""

_SEP = "\t"
_GRADE_LINES = 1 << 62
"""A grade's evidence counts after every trial's error lines (as the report reads them)."""
_POS = 1 << 20


def create(conn: sqlite3.Connection) -> None:
    """Make the table (in the caller's transaction)."""
    conn.execute(
        f"CREATE TABLE IF NOT EXISTS {SUMMARIES} (run TEXT NOT NULL, case_id TEXT NOT NULL, "
        "kind TEXT NOT NULL, key TEXT NOT NULL, n INTEGER NOT NULL, first INTEGER NOT NULL, "
        "PRIMARY KEY (run, case_id, kind, key)) WITHOUT ROWID"
    )


Tally = tuple[str, str, int, int]
"""(kind, key, n, first)."""


def tallies(trial: TrialRecord) -> list[Tally]:
    """What one trial adds to its case's summary."""
    at = trial.idx * _POS
    out: list[Tally] = [(VERDICT, trial.verdict.value, 1, at)]
    if trial.failed:
        out.append((FAILED, "", 1, at))
    failure = trial.failure
    if failure is not None:
        out.append((CAUSE, failure.value, 1, at))
    out += _counted(GUARD, (g.value for g in trial.guards), at)
    if trial.cause is not None:
        kind = USER if trial.cause is Cause.USER else EVIDENCE
        lines = (f"{trial.cause.value}: {line}" for line in trial.cause_detail)
        out += _counted(kind, lines, at)
    out += _counted(GRADER, (f"{g.grader}{_SEP}{g.verdict.value}" for g in trial.grades), at)
    lines = (
        f"{g.grader}: {line}" for g in trial.grades if g.verdict is not Verdict.PASS
        for line in g.evidence
    )  # fmt: skip
    out += _counted(EVIDENCE, lines, _GRADE_LINES + at)
    return out


def _counted(kind: str, keys: Iterable[str], at: int) -> list[Tally]:
    """Each key with its count, first seen at its first place among them."""
    firsts: dict[str, int] = {}
    counts: Counter[str] = Counter()
    for pos, key in enumerate(keys):
        firsts.setdefault(key, at + pos)
        counts[key] += 1
    return [(kind, key, counts[key], first) for key, first in firsts.items()]


def add(conn: sqlite3.Connection, run: str, case_id: str, counts: Iterable[Tally]) -> None:
    """Add a trial's tallies to its case's (in the caller's transaction)."""
    conn.executemany(
        f"INSERT INTO {SUMMARIES} VALUES (?, ?, ?, ?, ?, ?) ON CONFLICT DO UPDATE "
        "SET n = n + excluded.n, first = MIN(first, excluded.first)",
        [(run, case_id, *tally) for tally in counts],
    )


def take_away(
    conn: sqlite3.Connection, run: str, case_id: str, old: list[Tally], new: list[Tally]
) -> bool:
    """Take a replaced trial's tallies away (``new``: its replacement's, to come).

    Returns whether the case must be counted again: a ``first`` the old trial may have set
    is not set again by the new one, and other trials still count its key.
    """
    conn.executemany(
        f"UPDATE {SUMMARIES} SET n = n - ? WHERE run = ? AND case_id = ? AND kind = ? AND key = ?",
        [(n, run, case_id, kind, key) for kind, key, n, _ in old],
    )
    again = {(kind, key, first) for kind, key, _, first in new}
    stale = False
    for kind, key, _, first in old:
        if (kind, key, first) in again:
            continue
        row = conn.execute(
            f"SELECT n, first FROM {SUMMARIES} WHERE run = ? AND case_id = ? AND kind = ? "
            "AND key = ?",
            (run, case_id, kind, key),
        ).fetchone()
        stale = stale or (row is not None and row[0] > 0 and row[1] == first)
    conn.execute(
        f"DELETE FROM {SUMMARIES} WHERE run = ? AND case_id = ? AND n <= 0", (run, case_id)
    )
    return stale


def recount_all(
    conn: sqlite3.Connection, read: Callable[[sqlite3.Connection, str, str], list[TrialRecord]]
) -> None:
    """Count every case of every run into its summary (a store before version 6)."""
    conn.execute(f"DELETE FROM {SUMMARIES}")
    for run, case_id in conn.execute("SELECT DISTINCT run, case_id FROM trials").fetchall():
        recount(conn, run, case_id, read(conn, run, case_id))


def recount(
    conn: sqlite3.Connection, run: str, case_id: str, trials: Iterable[TrialRecord]
) -> None:
    """Count a case again from its trials (in the caller's transaction)."""
    conn.execute(f"DELETE FROM {SUMMARIES} WHERE run = ? AND case_id = ?", (run, case_id))
    for trial in trials:
        add(conn, run, case_id, tallies(trial))


@dataclass(frozen=True, slots=True)
class CaseSummary:
    """One case of a run as the store counts it: its trials by verdict, and its tallies.

    What is listed in order is in the order counting its trials by index would first
    meet it (so ties sort as they would).
    """

    case_id: str
    verdicts: Mapping[Verdict, int]
    """Trials per verdict (those the case has)."""
    failed: int
    """Trials the agent failed (``TrialRecord.failed``)."""
    causes: Mapping[FailureCause, int]
    """Trials per primary failure cause (those the case has)."""
    guards: Mapping[Guard, int]
    """Trials per limit that fired."""
    grades: tuple[tuple[str, Verdict, int], ...]
    """(grader, verdict, grades): each grader's grades of each verdict."""
    evidence: tuple[tuple[str, int], ...]
    """Lines of evidence of what did not pass (``grader: line``, ``agent: line``), counted."""
    user: tuple[tuple[str, int], ...]
    """Lines of the simulated user's failures (``user: line``), counted."""

    @property
    def trials(self) -> int:
        """Every trial of the case."""
        return sum(self.verdicts.values())


def count(conn: sqlite3.Connection, run: str) -> int:
    """Every trial of a run."""
    row = conn.execute(
        f"SELECT SUM(n) FROM {SUMMARIES} WHERE run = ? AND kind = ?", (run, VERDICT)
    ).fetchone()
    return int(row[0] or 0)


def read(conn: sqlite3.Connection, run: str) -> list[CaseSummary]:
    """Every case of a run, by id, as its summary holds it."""
    rows = conn.execute(
        f"SELECT case_id, kind, key, n FROM {SUMMARIES} WHERE run = ? AND n > 0 "
        "ORDER BY case_id, kind, first",
        (run,),
    )
    out: list[CaseSummary] = []
    case: dict[str, list[tuple[str, int]]] = {}
    current = None
    for case_id, kind, key, n in rows:
        if case_id != current:
            if current is not None:
                out.append(_summary(current, case))
            current, case = case_id, {}
        case.setdefault(kind, []).append((key, n))
    if current is not None:
        out.append(_summary(current, case))
    return out


def _summary(case_id: str, tallied: dict[str, list[tuple[str, int]]]) -> CaseSummary:
    grades = []
    for key, n in tallied.get(GRADER, []):
        grader, _, verdict = key.rpartition(_SEP)  # (a verdict has no tab; a name might)
        grades.append((grader, Verdict(verdict), n))
    return CaseSummary(
        case_id,
        {Verdict(k): n for k, n in tallied.get(VERDICT, [])},
        sum(n for _, n in tallied.get(FAILED, [])),
        {FailureCause(k): n for k, n in tallied.get(CAUSE, [])},
        {Guard(k): n for k, n in tallied.get(GUARD, [])},
        tuple(grades),
        tuple(tallied.get(EVIDENCE, [])),
        tuple(tallied.get(USER, [])),
    )


_FAILED_SQL = (
    f"(verdict = '{Verdict.FAIL.value}' OR (verdict = '{Verdict.ERROR.value}' "
    f"AND cause IN ({', '.join(repr(c) for c in sorted(AGENT_CAUSES))})))"
)
"""``TrialRecord.failed`` in SQL: a ``fail``, or an ``error`` of one of ``AGENT_CAUSES``."""


def cassettes(conn: sqlite3.Connection, run: str, *, failed: bool) -> list[tuple[str, str]]:
    """Per case, the cassette of its first trial (by index) that did not pass, or failed.

    Reads those trials' rows alone (an index range, a few columns), never every trial.
    """
    also = f"AND {_FAILED_SQL} " if failed else ""
    rows = conn.execute(
        "SELECT case_id, cassette, MIN(idx) FROM trials WHERE run = ? AND verdict != ? "
        f"AND cassette IS NOT NULL AND cassette != '' {also}GROUP BY case_id ORDER BY case_id",
        (run, Verdict.PASS.value),
    )
    return [(case_id, cassette) for case_id, cassette, _ in rows]


def tags(conn: sqlite3.Connection, run: str) -> list[tuple[str, tuple[str, ...]]]:
    """Per case with tags, those of its first trial (by index) that has any."""
    rows = conn.execute(
        "SELECT case_id, tags, MIN(idx) FROM trials WHERE run = ? AND tags IS NOT NULL "
        "AND tags != '[]' GROUP BY case_id ORDER BY case_id",
        (run,),
    )
    return [(case_id, tuple(json.loads(text))) for case_id, text, _ in rows]
