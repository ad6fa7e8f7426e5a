"""Tool-use metrics: selection vs argument accuracy against the reference, abstention, loops, cost.

Tool selection and argument accuracy fail for different reasons (the prompt
chooses the tool, the schema shapes its arguments), so they are kept apart.
"""

from __future__ import annotations

import json
import math
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from recorder import CaseFileError, CassetteError, ToolEvent, read_cassette

from ._case import Case, load_case
from ._diff import canonical_numbers
from ._store import Store

ABSTAIN_TAG = "abstain"
"""Cases with this tag have no suitable tool: the right move is no call (a question, a hand-off)."""


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
    """Trials the rule grader caught in a loop."""
    percentiles: dict[str, tuple[float | None, float | None]]
    """p50 and p95 of steps, input and output tokens, cost and latency (over known values)."""
    unknown_usage: int = 0
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
            **{k: {"p50": v[0], "p95": v[1]} for k, v in self.percentiles.items()},
        }


def _key(args: Any) -> str:
    # The same canonical arguments as offline matching: 35 and 35.0 are equal.
    return json.dumps(canonical_numbers(dict(args)), sort_keys=True, default=str)


def _accuracy(case: Case, calls: list[ToolEvent]) -> tuple[float, float | None]:
    wanted = Counter(c.tool for c in case.reference_solution)
    called = Counter(c.name for c in calls)
    selected = sum((wanted & called).values())
    remaining = list(calls)
    right = 0
    for ref in case.reference_solution:
        match = next((c for c in remaining if c.name == ref.tool), None)
        if match is not None:
            remaining.remove(match)
            right += _key(match.args) == _key(ref.args)
    return selected / sum(wanted.values()), (right / selected if selected else None)


def _mean(values: list[float]) -> float | None:
    return sum(values) / len(values) if values else None


def tool_use(case: Case | None, trials: list[dict[str, Any]], loops: int) -> ToolUse:
    """Metrics over one case's trials (rows of the store)."""
    selections: list[float] = []
    arguments: list[float] = []
    abstained: list[float] = []
    for row in trials:
        try:
            calls = [e for e in read_cassette(row["cassette"]).events if isinstance(e, ToolEvent)]
        except (CassetteError, TypeError, OSError):
            continue
        if case is not None and case.reference_solution:
            selection, argument = _accuracy(case, calls)
            selections.append(selection)
            if argument is not None:
                arguments.append(argument)
        if case is not None and ABSTAIN_TAG in case.tags:
            abstained.append(0.0 if calls else 1.0)
    return ToolUse(
        len(trials),
        _mean(selections),
        _mean(arguments),
        _mean(abstained),
        loops,
        _percentiles(trials),
        _unknown_usage(trials),
    )


def _unknown_usage(trials: list[dict[str, Any]]) -> int:
    return sum(1 for t in trials if t.get("steps") and t.get("input_tokens") is None)


def _percentiles(trials: list[dict[str, Any]]) -> dict[str, tuple[float | None, float | None]]:
    out = {}
    for name in ("steps", "input_tokens", "output_tokens", "cost", "latency"):
        values = [float(t[name]) for t in trials if t.get(name) is not None]
        out[name] = (percentile(values, 50), percentile(values, 95))
    return out


def run_tool_use(store: Store, name: str) -> tuple[dict[str, ToolUse], ToolUse]:
    """Per case and for the whole run (case means; percentiles over all trials)."""
    run = store.run(name)
    cases: dict[str, Case] = {}
    for path in (run or {}).get("spec", {}).get("cases", []):
        try:
            case = load_case(Path(path))
        except CaseFileError:
            continue
        cases[case.id] = case
    loops: Counter[str] = Counter()
    for grade in store.grades(name):
        if grade["grader"] == "rule" and any(e.startswith("loop:") for e in grade["evidence"]):
            loops[grade["case_id"]] += 1
    trials = store.trials(name)
    per_case = {
        case_id: tool_use(
            cases.get(case_id), [t for t in trials if t["case_id"] == case_id], loops[case_id]
        )
        for case_id in dict.fromkeys(t["case_id"] for t in trials)
    }
    overall = ToolUse(
        len(trials),
        _mean([u.selection for u in per_case.values() if u.selection is not None]),
        _mean([u.arguments for u in per_case.values() if u.arguments is not None]),
        _mean([u.abstention for u in per_case.values() if u.abstention is not None]),
        sum(loops.values()),
        _percentiles(trials),
        _unknown_usage(trials),
    )
    return per_case, overall
