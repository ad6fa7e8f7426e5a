"""A run's tool use: means of its trials' (``replay.graders._tooluse``), read from the store.

Selection vs argument accuracy against the reference, abstention, loops, and
percentiles of steps, tokens, cost and latency.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from ._store import Store


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


def tool_use(trials: Sequence[Mapping[str, Any]]) -> ToolUse:
    """Metrics over one case's trials, from their rows in the store alone.

    (Trials stored by a version before tool use was stored with them have
    none: they count in ``trials`` and the percentiles only.)
    """
    selections = [t["selection"] for t in trials if t.get("selection") is not None]
    arguments = [t["arguments"] for t in trials if t.get("arguments") is not None]
    abstained = [float(t["abstained"]) for t in trials if t.get("abstained") is not None]
    return ToolUse(
        len(trials),
        _mean(selections),
        _mean(arguments),
        _mean(abstained),
        sum(1 for t in trials if t.get("loops")),
        _percentiles(trials),
        _unknown_usage(trials),
        sum(1 for t in trials if t.get("tool_calls") is None),
    )


def _unknown_usage(trials: Sequence[Mapping[str, Any]]) -> int:
    return sum(1 for t in trials if t.get("steps") and t.get("input_tokens") is None)


def _percentiles(
    trials: Sequence[Mapping[str, Any]],
) -> dict[str, tuple[float | None, float | None]]:
    out = {}
    for name in ("steps", "input_tokens", "output_tokens", "cost", "latency"):
        values = [float(t[name]) for t in trials if t.get(name) is not None]
        out[name] = (percentile(values, 50), percentile(values, 95))
    return out


def run_tool_use(store: Store, name: str) -> tuple[dict[str, ToolUse], ToolUse]:
    """Per case and for the whole run (case means; percentiles over all trials)."""
    trials = store.trials(name)
    per_case = {
        case_id: tool_use([t for t in trials if t["case_id"] == case_id])
        for case_id in dict.fromkeys(t["case_id"] for t in trials)
    }
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
