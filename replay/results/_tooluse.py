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
    ordered = sorted(values)
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


def tool_use(trials: Sequence[TrialRecord]) -> ToolUse:
    """Metrics over one case's trials, from what the store holds of them alone.

    (Trials whose tool use was not measured, such as those stored by a version
    before tool use was stored with them, count in ``trials`` and the
    percentiles only.)
    """
    used = [t.tool_use for t in trials if t.tool_use is not None]
    selections = [u.selection for u in used if u.selection is not None]
    arguments = [u.arguments for u in used if u.arguments is not None]
    abstained = [float(u.abstained) for u in used if u.abstained is not None]
    return ToolUse(
        len(trials),
        _mean(selections),
        _mean(arguments),
        _mean(abstained),
        sum(1 for u in used if u.loops),
        _percentiles(trials),
        _unknown_usage(trials),
        len(trials) - len(used),
    )


def _unknown_usage(trials: Sequence[TrialRecord]) -> int:
    return sum(1 for t in trials if t.usage.steps and t.usage.input_tokens is None)


def _percentiles(trials: Sequence[TrialRecord]) -> dict[str, tuple[float | None, float | None]]:
    """p50 and p95 of each usage figure, over the trials that know it."""
    usages = [t.usage for t in trials]
    figures: dict[str, list[float | None]] = {
        "steps": [u.steps for u in usages],
        "input_tokens": [u.input_tokens for u in usages],
        "output_tokens": [u.output_tokens for u in usages],
        "cost": [u.cost for u in usages],
        "latency": [u.latency for u in usages],
    }
    out = {}
    for name, figure in figures.items():
        values = [float(v) for v in figure if v is not None]
        out[name] = (percentile(values, 50), percentile(values, 95))
    return out


def run_tool_use(trials: Sequence[TrialRecord]) -> tuple[dict[str, ToolUse], ToolUse]:
    """Per case and for the whole run (case means; percentiles over all trials)."""
    by_case: dict[str, list[TrialRecord]] = {}
    for trial in trials:  # (one pass: a 1,000-case run is not read 1,000 times)
        by_case.setdefault(trial.case_id, []).append(trial)
    per_case = {case_id: tool_use(rows) for case_id, rows in by_case.items()}
    overall = ToolUse(
        len(trials),
        _mean([u.selection for u in per_case.values() if u.selection is not None]),
        _mean([u.arguments for u in per_case.values() if u.arguments is not None]),
        _mean([u.abstention for u in per_case.values() if u.abstention is not None]),
        sum(u.loops for u in per_case.values()),
        _percentiles(trials),
        _unknown_usage(trials),
        sum(u.unmeasured for u in per_case.values()),
    )
    return per_case, overall
