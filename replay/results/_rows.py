"""A run's trials as a report reads them: a few columns of their rows, no grade, no record.

``build_report`` counts from the per-case summaries (``_summaries``); what is not a count
(usage percentiles, tool use means, partial credit's quartiles, each case's direction and
first failing cassette, the trials under each failure cause) it reads here, case by case,
from the columns of ``trials`` that hold it (the record's, and ``_facts``'s). A
100,000-trial run's rows are read in a fraction of a second; its records with their
grades took seconds. ``trial_texts`` writes each trial of ``report --json`` from its row.
"""

from __future__ import annotations

import functools
import json
import sqlite3
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from itertools import groupby
from operator import itemgetter
from typing import Any

from ..graders import Verdict
from . import _facts as facts
from ._causes import CauseGroup, FailedTrial, grouped
from ._json_text import scalar_text, string_text
from ._tooluse import USAGE_COLUMNS, ToolUse, columns_tool_use, run_of

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


def read_rows(conn: sqlite3.Connection, run: str) -> RunRows:
    """Read a run's rows, case by case (one case's held at a time)."""
    rows = conn.execute(
        f"SELECT {', '.join((*_COLUMNS, *USAGE_COLUMNS))} FROM trials WHERE run = ? "
        "ORDER BY case_id, idx",
        (run,),
    )
    cases: list[CaseRows] = []
    failed: list[FailedTrial] = []
    figures: dict[str, list[float]] = {}
    for case_id, group in groupby(rows, key=itemgetter(0)):
        trials = list(group)
        _, idxs, suites, verdicts, cassettes, expects, failures, whys, credits, *usage = zip(
            *trials, strict=True
        )
        use, known = columns_tool_use(usage)
        for name, values in known.items():
            figures.setdefault(name, []).extend(values)
        declared = [e for e in expects if e is not None]
        shares = [
            facts.credit(text).share
            for verdict, text in zip(verdicts, credits, strict=True)
            if text is not None and verdict in _GRADED
        ]
        failing = next(
            (c for v, c in zip(verdicts, cassettes, strict=True) if v != _PASS and c), None
        )
        cases.append(
            CaseRows(
                case_id,
                suites[0] or "",
                declared[-1] if declared else UNDECLARED,
                failing,
                shares,
                use,
            )
        )
        failed += [
            FailedTrial(
                case_id,
                idxs[i],
                facts.cause(failure),
                whys[i] or "",
                cassettes[i],
                facts.credit(credits[i]) if credits[i] is not None else None,
            )
            for i, failure in enumerate(failures)
            if failure is not None
        ]
    return RunRows(
        cases, run_of([c.tool_use for c in cases], figures), grouped(failed, ordered=True)
    )


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
    ``pad`` (a newline and its spaces), written from the trial's row: one f-string a
    trial (100,000 of them), its lists and partial credit rendered once per text.
    """
    inner = pad + "  "
    k = [inner + string_text(key) + ": " for key in _TRIAL_KEYS]
    lists = functools.lru_cache(maxsize=4096)(functools.partial(_list_text, pad=inner))
    credits = functools.lru_cache(maxsize=4096)(functools.partial(_credit_text, pad=inner))
    rows = conn.execute(
        f"SELECT {', '.join(_TRIAL_COLUMNS)} FROM trials WHERE run = ? ORDER BY case_id, idx",
        (run,),
    )
    s, n, null = string_text, scalar_text, "null"
    for (
        case,
        idx,
        verdict,
        failure,
        cause,
        detail,
        guards,
        cassette,
        *usage,
        expects,
        credit,
    ) in rows:
        steps, tokens_in, tokens_out, latency, cost = usage
        yield (
            f"{{{k[0]}{s(case)},{k[1]}{n(idx)},{k[2]}{s(verdict)},"
            f"{k[3]}{null if failure is None else s(failure)},"
            f"{k[4]}{null if cause is None else s(cause)},{k[5]}{lists(detail)},"
            f"{k[6]}{lists(guards)},{k[7]}{null if cassette is None else s(cassette)},"
            f"{k[8]}{n(steps)},{k[9]}{n(tokens_in)},{k[10]}{n(tokens_out)},"
            f"{k[11]}{n(latency)},{k[12]}{n(cost)},"
            f"{k[13]}{null if expects is None else s(expects)},{k[14]}{credits(credit)}{pad}}}"
        )


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
