"""A run's trials as a report reads them: a few columns of their rows, no grade, no record.

``build_report`` counts from the per-case summaries (``_summaries``); what is not a count
(usage percentiles, tool use means, partial credit's quartiles, each case's direction and
first failing cassette, the trials under each failure cause) it reads here, case by case.
A case is worked out from the columns of ``trials`` that hold it (the record's, and
``_facts``'s), and kept (``case_rows``, msgpack) when its run finishes: a finished
100,000-trial run's report reads 1,000 kept cases (~0.1 s), not 100,000 rows (~0.8 s).
Writing a trial of a case drops what was kept of it (worked out again when read, and kept
again if the run finishes again). ``trial_texts`` writes each trial of ``report --json``
from its row.
"""

from __future__ import annotations

import functools
import json
import math
import sqlite3
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from itertools import groupby
from operator import itemgetter
from typing import Any

import msgpack

from ..graders import Verdict
from . import _facts as facts
from . import _summaries as summaries
from ._causes import CauseGroup, FailedTrial, grouped
from ._json_text import scalar_text, string_text
from ._tooluse import FIGURES, USAGE_COLUMNS, ToolUse, columns_tool_use, run_of

UNDECLARED = "undeclared"
"""The direction of a case that declares none (``expects:`` unset)."""
_GRADED = (Verdict.PASS.value, Verdict.FAIL.value)
"""The verdicts pass rates count, and partial credit with them."""
_PASS = Verdict.PASS.value
_COLUMNS = ("case_id", "idx", "suite", "verdict", "cassette", "expects", *facts.COLUMNS)


@dataclass(frozen=True, slots=True)
class CaseRows:
    """What a report reads of one case's trials beyond its summary."""

    case_id: str
    suite: str
    """Its first trial's suite (``""``: none)."""
    direction: str
    """``act``, ``refrain`` or ``undeclared``: the last its trials declare."""
    failing_cassette: str | None
    """The cassette of its first trial (by index) that did not pass."""
    shares: list[float]
    """The partial credit of its graded trials that record one, by index."""
    tool_use: ToolUse


@dataclass(frozen=True, slots=True)
class RunRows:
    """Every case's ``CaseRows``, by id; the run's tool use; the trials under each cause."""

    cases: list[CaseRows]
    tool_use: ToolUse
    causes: list[CauseGroup]


ROWS = "case_rows"
"""The table: each case of a finished run as ``read_rows`` reads it, kept (store version 8)."""
_FORMAT = 1
"""The layout of a kept case (``_case_data``): a row of another is read as not kept."""
_SELECT = f"SELECT {', '.join((*_COLUMNS, *USAGE_COLUMNS))} FROM trials WHERE run = ?"


def create(conn: sqlite3.Connection) -> None:
    """Make the table (in the caller's transaction)."""
    conn.execute(
        f"CREATE TABLE IF NOT EXISTS {ROWS} (run TEXT NOT NULL, case_id TEXT NOT NULL, "
        "format INTEGER NOT NULL, data BLOB NOT NULL, PRIMARY KEY (run, case_id)) WITHOUT ROWID"
    )


def keep(conn: sqlite3.Connection, run: str) -> None:
    """Work out and keep each case of ``run`` not kept yet (as it finishes; in its transaction).

    A finished run's report then reads a few kilobytes a case, not every trial's row.
    """
    kept = {c for (c,) in conn.execute(f"SELECT case_id FROM {ROWS} WHERE run = ?", (run,))}
    conn.executemany(
        f"INSERT OR REPLACE INTO {ROWS} VALUES (?, ?, ?, ?)",
        [
            (run, case_id, _FORMAT, msgpack.packb(data))
            for case_id, data in _worked_out(conn, run, skip=kept)
        ],
    )


def keep_finished(conn: sqlite3.Connection) -> None:
    """``keep`` every finished run (a store before version 8, as it is brought up to date)."""
    for (run,) in conn.execute("SELECT name FROM runs WHERE finished IS NOT NULL").fetchall():
        keep(conn, run)


def forget(conn: sqlite3.Connection, run: str, case_id: str | None = None) -> None:
    """Drop what is kept of a case (a trial of it written) or of a whole run."""
    if case_id is None:
        conn.execute(f"DELETE FROM {ROWS} WHERE run = ?", (run,))
    else:
        conn.execute(f"DELETE FROM {ROWS} WHERE run = ? AND case_id = ?", (run, case_id))


def read_rows(conn: sqlite3.Connection, run: str) -> RunRows:
    """Read a run's rows: each case as kept, or worked out from its trials' rows."""
    kept = {
        case_id: data
        for case_id, packed in conn.execute(
            f"SELECT case_id, data FROM {ROWS} WHERE run = ? AND format = ?", (run, _FORMAT)
        )
        if (data := _unpacked(packed)) is not None
    }
    cases = [
        case_id
        for (case_id,) in conn.execute(
            f"SELECT DISTINCT case_id FROM {summaries.SUMMARIES} WHERE run = ? ORDER BY case_id",
            (run,),
        )
    ]
    missing = [case_id for case_id in cases if case_id not in kept]
    if missing:  # (a run still going, or a case written since it finished)
        kept.update(_worked_out(conn, run, set(missing) if len(missing) * 4 < len(cases) else None))
    rows: list[CaseRows] = []
    failed: list[FailedTrial] = []
    figures: dict[str, list[float]] = {name: [] for name in FIGURES}
    for case_id in cases:
        suite, direction, failing, shares, use, known, failures = kept[case_id]
        rows.append(CaseRows(case_id, suite, direction, failing, shares, _tool_use(use)))
        for name, values in zip(FIGURES, known, strict=True):
            figures[name] += values
        failed += [
            FailedTrial(
                case_id,
                idx,
                facts.cause(failure),
                why,
                cassette,
                facts.credit(credit) if credit is not None else None,
            )
            for idx, failure, why, cassette, credit in failures
        ]
    return RunRows(
        rows,
        run_of([c.tool_use for c in rows], figures if rows else {}),
        grouped(failed, ordered=True),
    )


def _unpacked(packed: bytes) -> list[Any] | None:
    """A kept case, or None where it is damaged (then worked out from its rows again)."""
    try:
        data = msgpack.unpackb(packed)
    except (ValueError, TypeError, msgpack.UnpackException):
        return None
    return data if isinstance(data, list) and len(data) == _FIELDS else None


_FIELDS = 7
"""The items of a kept case (``_case_data``)."""


def _worked_out(
    conn: sqlite3.Connection,
    run: str,
    only: set[str] | None = None,
    skip: set[str] | frozenset[str] = frozenset(),
) -> Iterator[tuple[str, list[Any]]]:
    """Each case's data from its trials' rows, one case held at a time.

    Every case's but those in ``skip`` (its trials read in one pass); or those in
    ``only``, each case's trials read apart.
    """
    if only is None:
        rows = conn.execute(f"{_SELECT} ORDER BY case_id, idx", (run,))
        for case_id, group in groupby(rows, key=itemgetter(0)):
            if case_id not in skip:
                yield case_id, _case_data(list(group))
        return
    for case_id in sorted(only):
        yield (
            case_id,
            _case_data(
                conn.execute(f"{_SELECT} AND case_id = ? ORDER BY idx", (run, case_id)).fetchall()
            ),
        )


def _case_data(trials: list[tuple[Any, ...]]) -> list[Any]:
    """One case's trials' rows as a report reads them (what ``keep`` keeps, as msgpack)."""
    _, idxs, suites, verdicts, cassettes, expects, failures, whys, credits, *usage = zip(
        *trials, strict=True
    )
    use, known = columns_tool_use(usage)
    declared = [e for e in expects if e is not None]
    shares = [
        facts.credit(text).share
        for verdict, text in zip(verdicts, credits, strict=True)
        if text is not None and verdict in _GRADED
    ]
    failing = next((c for v, c in zip(verdicts, cassettes, strict=True) if v != _PASS and c), None)
    return [
        suites[0] or "",
        declared[-1] if declared else UNDECLARED,
        failing,
        shares,
        [
            use.trials,
            use.selection,
            use.arguments,
            use.abstention,
            use.loops,
            [list(use.percentiles[name]) for name in FIGURES],
            use.unknown_usage,
            use.unmeasured,
        ],
        [known[name] for name in FIGURES],
        [
            [idxs[i], failure, whys[i] or "", cassettes[i], credits[i]]
            for i, failure in enumerate(failures)
            if failure is not None
        ],
    ]


def _tool_use(data: list[Any]) -> ToolUse:
    trials, selection, arguments, abstention, loops, percentiles, unknown, unmeasured = data
    ends = {name: (p50, p95) for name, (p50, p95) in zip(FIGURES, percentiles, strict=True)}
    return ToolUse(trials, selection, arguments, abstention, loops, ends, unknown, unmeasured)


_TRIAL_FIELDS = (
    ("case_id", "case"), ("idx", "idx"), ("verdict", "verdict"), ("failure", "failure"),
    ("cause", "cause"), ("cause_detail", "cause_detail"), ("guards", "guards"),
    ("cassette", "cassette"), ("steps", "steps"), ("input_tokens", "input_tokens"),
    ("output_tokens", "output_tokens"), ("latency", "latency"), ("cost", "cost"),
    ("expects", "expects"), ("credit", "partial_credit"),
)  # fmt: skip
"""A trial's columns and its keys in ``report --json``, in its keys' order."""
_TRIAL_COLUMNS = tuple(column for column, _ in _TRIAL_FIELDS)
_TRIAL_KEYS = tuple(key for _, key in _TRIAL_FIELDS)
_LISTS = frozenset({"cause_detail", "guards"})
"""Columns holding a JSON list (NULL: empty)."""


def trial_texts(conn: sqlite3.Connection, run: str, pad: str) -> Iterator[str]:
    """Each trial of ``report --json`` (``report_json``'s ``trials``) as JSON text at ``pad``.

    The text ``json.dumps(..., indent=2)`` gives an item of a list whose items are at
    ``pad`` (a newline and its spaces), written from the trial's row. The rows are read
    some thousands at a time and written column by column (``_column_texts``: a column of
    one type is written by the type's own C function), each trial then one ``%``
    (100,000 of them); lists and partial credit rendered once per text.
    """
    inner = pad + "  "
    trial = "{" + ",".join(f"{inner}{string_text(key)}: %s" for key in _TRIAL_KEYS) + pad + "}"
    lists = functools.lru_cache(maxsize=4096)(functools.partial(_list_text, pad=inner))
    credits = functools.lru_cache(maxsize=4096)(functools.partial(_credit_text, pad=inner))
    written = [lists if column in _LISTS else _column_texts for column in _TRIAL_COLUMNS]
    written[-1] = credits
    rows = conn.execute(
        f"SELECT {', '.join(_TRIAL_COLUMNS)} FROM trials WHERE run = ? ORDER BY case_id, idx",
        (run,),
    )
    while some := rows.fetchmany(_ROWS_AT_ONCE):
        columns = [
            list(map(write, column)) if write is not _column_texts else _column_texts(column)
            for write, column in zip(written, zip(*some, strict=True), strict=True)
        ]
        yield from map(trial.__mod__, zip(*columns, strict=True))


_ROWS_AT_ONCE = 4096
"""Trials' rows read, and written, at once by ``trial_texts``."""
_quoted = json.encoder.encode_basestring_ascii  # (``string_text``'s own, C where built)


def _column_texts(values: tuple[Any, ...]) -> list[str]:
    """Each value of a column as ``json.dumps`` writes it."""
    kinds = set(map(type, values))
    if kinds == {str}:
        return list(map(_quoted, values))
    if kinds == {int}:
        return list(map(int.__repr__, values))
    if kinds == {float} and all(map(math.isfinite, values)):
        return list(map(float.__repr__, values))
    if kinds == {str, type(None)}:
        return ["null" if value is None else _quoted(value) for value in values]
    return list(map(scalar_text, values))


def failed_texts(trials: Iterable[FailedTrial], pad: str) -> Iterator[str]:
    """Each trial under a cause in ``report --json`` (``causes``' ``trials``) at ``pad``."""
    k = [pad + "  " + string_text(key) + ": " for key in ("case", "idx", "detail", "cassette")]
    s, null = string_text, "null"
    for t in trials:
        cassette = null if t.cassette is None else s(t.cassette)
        yield (
            f"{{{k[0]}{s(t.case_id)},{k[1]}{t.idx!r},{k[2]}{s(t.detail)},{k[3]}{cassette}{pad}}}"
        )


def _strings(values: list[Any], pad: str) -> str:
    if not values:
        return "[]"
    inner = pad + "  "
    return "[" + inner + ("," + inner).join(map(scalar_text, values)) + pad + "]"


def _list_text(raw: str | None, pad: str) -> str:
    return _strings(json.loads(raw) if raw is not None else [], pad)


def _credit_text(raw: str | None, pad: str) -> str:
    if raw is None:
        return "null"
    found, inner = facts.credit(raw), pad + "  "
    return (
        f'{{{inner}"share": {scalar_text(found.share)},{inner}"held": '
        f'{_strings(list(found.held), inner)},{inner}"failed": '
        f"{_strings(list(found.failed), inner)}{pad}}}"
    )
