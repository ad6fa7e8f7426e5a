"""``matches_reference``: the trial must leave the world as the case's reference solution does.

The reference solution runs once per case (and tool set) on a fresh world
(``replay.cases._solution``); the rows it touched are kept as they ended. The
trial passes when every row either run touched ends the same: a row the
agent changed and the reference did not must still equal the fixture's; a
row the reference wrote must hold what it wrote. Differences are explained
row by row and field by field.

Value-equal values are equal: an integer and a float of the same value, and
numbers within ``tolerance``. Fields named in ``multisets`` (``table.field``,
or a dotted path into a nested field) compare their lists in any order.
Tools that raise in the reference run are skipped, as tau2-bench does.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from pydantic import BaseModel, ConfigDict, Field

from ..worlds import StateDiff, value_diff
from ._core import Grade, Trial, Verdict
from ._world_view import WorldView

Key = tuple[str, tuple[Any, ...]]


class MatchReference(BaseModel):
    """A case's ``match_reference:`` settings (its presence turns the grader on)."""

    model_config = ConfigDict(extra="forbid", frozen=True, use_attribute_docstrings=True)

    multisets: list[str] = Field(default_factory=list)
    """``table.field`` (or deeper, dotted) lists compared in any order."""
    tolerance: float = Field(default=1e-6, ge=0)
    """Numbers this close are equal."""


@dataclass(frozen=True, slots=True)
class Reference:
    """The reference solution's outcome: the rows it touched, as they ended."""

    diff: StateDiff
    rows: Mapping[Key, dict[str, Any] | None]
    failed: tuple[str, ...] = ()
    """Reference calls that raised (skipped)."""


def key_value(key: tuple[Any, ...]) -> Any:
    """A primary key as ``WorldView.get`` takes it: the value, or the tuple of a compound key."""
    return key[0] if len(key) == 1 else key


def touched(diff: StateDiff) -> set[Key]:
    """(table, key) of every row a diff inserted, deleted or updated."""
    return {
        (name, key)
        for name, table in diff.tables.items()
        for part in (table.inserted, table.deleted, table.updated)
        for key in part
    }


def _original(trial_diff: StateDiff, view: WorldView, table: str, key: tuple[Any, ...]) -> Any:
    """A row the trial touched, as it was in the fixture (None: the trial created it)."""
    part = trial_diff.table(table)
    if key in part.inserted:
        return None
    if key in part.deleted:
        return view.decode(table, part.deleted[key])
    current = view.get(table, key_value(key)) or {}
    return {**current, **view.decode(table, part.updated[key].before)}


def _equal(a: Any, b: Any, settings: MatchReference, path: str) -> bool:
    if isinstance(a, bool) or isinstance(b, bool):
        return a is b
    if isinstance(a, (int, float)) and isinstance(b, (int, float)):
        return abs(a - b) <= settings.tolerance
    if isinstance(a, dict) and isinstance(b, dict):
        return all(_equal(a.get(k), b.get(k), settings, f"{path}.{k}") for k in a.keys() | b.keys())
    if isinstance(a, list) and isinstance(b, list):
        if len(a) != len(b):
            return False
        if path in settings.multisets:
            return _same_multiset(a, b, settings, path)
        return all(_equal(x, y, settings, path) for x, y in zip(a, b, strict=True))
    return bool(a == b)


def _same_multiset(a: list[Any], b: list[Any], settings: MatchReference, path: str) -> bool:
    """Whether each item of ``a`` pairs with its own item of ``b`` (within tolerance).

    Sorted by their JSON first (most lists pair off in that order); else a
    matching over every pair, so two items a tolerance apart still pair.
    """
    a, b = _sorted(a), _sorted(b)
    if all(_equal(x, y, settings, path) for x, y in zip(a, b, strict=True)):
        return True
    fits = [[j for j, y in enumerate(b) if _equal(x, y, settings, path)] for x in a]
    partner: dict[int, int] = {}  # item of b -> the item of a it is paired with

    def pair(i: int, seen: set[int]) -> bool:  # an augmenting path from item i of a
        for j in fits[i]:
            if j not in seen:
                seen.add(j)
                if j not in partner or pair(partner[j], seen):
                    partner[j] = i
                    return True
        return False

    return all(pair(i, set()) for i in range(len(a)))


def _sorted(items: list[Any]) -> list[Any]:
    def canon(value: Any) -> str:
        return json.dumps(_numbers(value), sort_keys=True, default=str)

    return sorted(items, key=canon)


def _numbers(value: Any) -> Any:
    if isinstance(value, float) and value.is_integer():
        return int(value)
    if isinstance(value, dict):
        return {k: _numbers(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_numbers(v) for v in value]
    return value


def _short(value: Any, limit: int = 160) -> str:
    text = json.dumps(value, default=str, sort_keys=True)
    return text if len(text) <= limit else text[: limit - 3] + "..."


def explain(
    trial_diff: StateDiff, view: WorldView, reference: Reference, settings: MatchReference
) -> list[str]:
    """Every difference between the trial's outcome and the reference's, one line each."""
    problems: list[str] = []
    agent = touched(trial_diff)
    for table, key in sorted(agent | set(reference.rows), key=lambda k: (k[0], repr(k[1]))):
        label = f"{table}[{_short(key_value(key))}]"
        if (table, key) in reference.rows:
            expected, source = reference.rows[(table, key)], "the reference"
        else:
            expected, source = _original(trial_diff, view, table, key), "the fixture"
        actual = view.get(table, key_value(key))
        if expected is None and actual is None:
            continue
        if expected is None:
            problems.append(f"{label}: the agent created it, {source} has no such row")
            continue
        if actual is None:
            problems.append(f"{label}: missing after the trial; {source} has {_short(expected)}")
            continue
        for field in sorted(expected.keys() | actual.keys()):
            want, got = expected.get(field), actual.get(field)
            if _equal(want, got, settings, f"{table}.{field}"):
                continue
            detail = value_diff(want, got) if isinstance(want, (dict, list)) else []
            how = f" ({'; '.join(detail[:4])})" if detail else ""
            problems.append(
                f"{label}.{field}: {source} has {_short(want)}, the trial {_short(got)}{how}"
            )
    return problems


def matches_reference(trial: Trial) -> list[Grade]:
    """Pass when the trial leaves every row as the reference solution does (see module)."""
    settings = trial.case.match_reference
    if settings is None:
        return []
    if trial.reference is None:
        why = "the reference solution could not be run here: give the case's --tools"
        return [Grade("matches_reference", Verdict.ERROR, (why,))]
    problems = explain(trial.diff, trial.world, trial.reference, settings)
    notes = tuple(f"reference call skipped: {f}" for f in trial.reference.failed)
    verdict = Verdict.FAIL if problems else Verdict.PASS
    return [Grade("matches_reference", verdict, (*problems, *notes))]
