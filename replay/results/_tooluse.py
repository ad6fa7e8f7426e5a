"""A run's tool use: means of its trials' (``replay.graders.TrialToolUse``), as stored.

Selection vs argument accuracy against the reference, abstention, loops, and
percentiles of steps, tokens, cost and latency.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from ._record import TrialRecord


def percentile(values: Sequence[float], p: float) -> float | None:
    """Nearest-rank percentile (p in 0..100); None for no values."""
    if not values:
        return None
    return _ranked(sorted(values), p)


def _ranked(ordered: Sequence[float], p: float) -> float | None:
    """``percentile`` of values already sorted."""
    if not ordered:
        return None
    return ordered[max(0, math.ceil(p / 100 * len(ordered)) - 1)]


@dataclass(frozen=True, slots=True)
class ToolUse:
    """Tool use over some trials."""

    trials: int
    selection: float | None
    """Share of the reference solution's calls whose tool was called (None: no reference)."""
    arguments: float | None
    """Of those, the share called with the reference's arguments."""
    abstention: float | None
    """Share of trials of abstain-tagged cases that called no tool (None: not such a case)."""
    loops: int
    """Trials that looped (a call repeated ``LOOP_REPEATS`` times with the same arguments)."""
    percentiles: dict[str, tuple[float | None, float | None]]
    """p50 and p95 of steps, input and output tokens, cost and latency (over known values)."""
    unknown_usage: int = 0
    unmeasured: int = 0
    """Trials stored before tool use was stored with them (version 1): none of the above."""
    """Trials whose token usage is unknown (a call reported none): left out of the tokens."""

    def to_json(self) -> dict[str, Any]:
        """As JSON-ready data."""
        return {
            "trials": self.trials,
            "selection": self.selection,
            "arguments": self.arguments,
            "abstention": self.abstention,
            "loops": self.loops,
            "unknown_usage": self.unknown_usage,
            "unmeasured": self.unmeasured,
            **{k: {"p50": v[0], "p95": v[1]} for k, v in self.percentiles.items()},
        }


def _mean(values: list[float]) -> float | None:
    return sum(values) / len(values) if values else None


USAGE_COLUMNS = (
    "steps",
    "input_tokens",
    "output_tokens",
    "cost",
    "latency",
    "tool_calls",
    "selection",
    "arguments",
    "abstained",
    "loops",
)
"""The ``trials`` columns tool use is computed from, in the order of a ``Usage``."""
FIGURES = USAGE_COLUMNS[:5]
"""The figures whose p50 and p95 are given (``ToolUse.percentiles``), by name."""

Usage = tuple[Any, ...]
"""One trial's ``USAGE_COLUMNS`` values (a report reads them from the store's rows)."""


def usage_of(trial: TrialRecord) -> Usage:
    """A trial's ``Usage``, as its row holds it."""
    u, t = trial.usage, trial.tool_use
    used = (None,) * 5 if t is None else (t.calls, t.selection, t.arguments, t.abstained, t.loops)
    return (u.steps, u.input_tokens, u.output_tokens, u.cost, u.latency, *used)


def tool_use(trials: Sequence[TrialRecord]) -> ToolUse:
    """Metrics over one case's trials, from what the store holds of them alone.

    (Trials whose tool use was not measured, such as those stored by a version
    before tool use was stored with them, count in ``trials`` and the
    percentiles only.)
    """
    return case_tool_use([usage_of(t) for t in trials])[0]


def case_tool_use(rows: Sequence[Usage]) -> tuple[ToolUse, dict[str, list[float]]]:
    """``tool_use`` of one case's trials' ``Usage``; and the figures known, for the run's."""
    return columns_tool_use(list(zip(*rows, strict=True)) if rows else [()] * len(USAGE_COLUMNS))


def columns_tool_use(
    columns: Sequence[Sequence[Any]],
) -> tuple[ToolUse, dict[str, list[float]]]:
    """``case_tool_use`` of the trials' ``Usage`` given column by column."""
    steps, tokens_in, _, _, _, calls, selection, arguments, abstained, loops = columns
    figures = {
        name: [float(v) for v in column if v is not None]
        for name, column in zip(FIGURES, columns, strict=False)
    }
    measured = [
        i
        for i, (a, b) in enumerate(zip(calls, loops, strict=True))
        if a is not None and b is not None
    ]
    found = ToolUse(
        len(steps),
        _mean([v for i in measured if (v := selection[i]) is not None]),
        _mean([v for i in measured if (v := arguments[i]) is not None]),
        _mean([float(v) for i in measured if (v := abstained[i]) is not None]),
        sum(1 for i in measured if loops[i]),
        _percentiles(figures),
        sum(1 for s, t in zip(steps, tokens_in, strict=True) if s and t is None),
        len(steps) - len(measured),
    )
    return found, figures


def _percentiles(figures: dict[str, list[float]]) -> dict[str, tuple[float | None, float | None]]:
    """p50 and p95 of each usage figure, over the trials that know it."""
    out = {}
    for name, values in figures.items():
        ordered = sorted(values)
        out[name] = (_ranked(ordered, 50), _ranked(ordered, 95))
    return out


def run_of(per_case: Sequence[ToolUse], figures: dict[str, list[float]]) -> ToolUse:
    """The run's tool use: its cases' means; percentiles over every trial (``figures``)."""
    return ToolUse(
        sum(u.trials for u in per_case),
        _mean([u.selection for u in per_case if u.selection is not None]),
        _mean([u.arguments for u in per_case if u.arguments is not None]),
        _mean([u.abstention for u in per_case if u.abstention is not None]),
        sum(u.loops for u in per_case),
        _percentiles(figures),
        sum(u.unknown_usage for u in per_case),
        sum(u.unmeasured for u in per_case),
    )


def run_tool_use(trials: Sequence[TrialRecord]) -> tuple[dict[str, ToolUse], ToolUse]:
    """Per case and for the whole run (case means; percentiles over all trials)."""
    by_case: dict[str, list[Usage]] = {}
    for trial in trials:  # (one pass: a 1,000-case run is not read 1,000 times)
        by_case.setdefault(trial.case_id, []).append(usage_of(trial))
    per_case: dict[str, ToolUse] = {}
    figures: dict[str, list[float]] = {name: [] for name in FIGURES}
    for case_id, rows in by_case.items():
        per_case[case_id], known = case_tool_use(rows)
        for name, values in known.items():
            figures[name] += values
    return per_case, run_of(list(per_case.values()), figures)
