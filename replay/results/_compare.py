"""Decision diffs: where two trials part ways (two runs compared: ``_paired``)."""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any, Literal

from recorder import Cassette, ToolEvent

from ..graders import agent_calls, step_order
from ..worlds import StateDiff, value_diff


@dataclass(frozen=True, slots=True)
class Divergence:
    """The first of the agent's tool calls where two trials differ."""

    call: int
    """1-based index in the sequence of the agent's tool calls."""
    step_a: int | None
    """The call's step in A as ``replay show`` numbers A's steps (None: A stopped)."""
    step_b: int | None
    """The call's step in B, as ``replay show`` numbers B's (None: B stopped)."""
    kind: Literal["tool", "arguments", "a stopped", "b stopped"]
    a: str | None
    b: str | None
    arguments: list[str] = field(default_factory=list)
    """Argument-level changes from A to B (same tool)."""

    @property
    def where(self) -> str:
        """The steps, as ``replay show`` numbers them: ``step 4``, or ``step 4 in A, 6 in B``."""
        if self.step_a == self.step_b or self.step_b is None:
            return f"step {self.step_a}" + (" in A" if self.step_b is None else "")
        if self.step_a is None:
            return f"step {self.step_b} in B"
        return f"step {self.step_a} in A, {self.step_b} in B"

    def describe(self) -> str:
        """One line saying where (``replay show``'s step numbers) and why."""
        if self.kind == "tool":
            return f"{self.where}: A called {self.a}, B called {self.b}"
        if self.kind == "arguments":
            changes = "; ".join(self.arguments)
            return f"{self.where}: both called {self.a}, with different arguments: {changes}"
        stopped, other = ("A", self.b) if self.kind == "a stopped" else ("B", self.a)
        return f"{self.where}: {stopped} stopped; the other went on with {other}"


@dataclass(frozen=True, slots=True)
class CassetteDiff:
    """How trial B differs from trial A."""

    divergence: Divergence | None
    state: list[str]
    """Rows one trial changed and the other did not (or changed differently)."""
    answers: tuple[str | None, str | None] | None
    """(A's, B's) final answers, when they differ."""

    @property
    def same(self) -> bool:
        """Whether the two trials made the same calls, changes and answer."""
        return self.divergence is None and not self.state and self.answers is None


def _call(event: ToolEvent) -> str:
    return f"{event.name}({', '.join(f'{k}={v!r}' for k, v in event.args.items())})"


def step_numbers(cassette: Cassette) -> list[tuple[ToolEvent, int]]:
    """The agent's tool calls (``agent_calls``), each with its step in ``replay show``."""
    number = {id(e): n for n, e in enumerate(step_order(cassette.events), 1)}
    return [(call, number[id(call)]) for call in agent_calls(cassette.events)]


def diff_cassettes(a: Cassette, b: Cassette) -> CassetteDiff:
    """Compare two trials: first divergence, then world changes, then answers.

    The divergence names the call's steps as ``replay show`` numbers each trial's steps.
    """
    calls_a, calls_b = step_numbers(a), step_numbers(b)
    divergence = None
    for call, ((x, sa), (y, sb)) in enumerate(zip(calls_a, calls_b, strict=False), 1):
        if x.name != y.name:
            divergence = Divergence(call, sa, sb, "tool", _call(x), _call(y))
            break
        changes = value_diff(x.args, y.args)
        if changes:
            divergence = Divergence(call, sa, sb, "arguments", x.name, y.name, changes)
            break
    else:
        if len(calls_a) != len(calls_b):
            call = min(len(calls_a), len(calls_b)) + 1
            if len(calls_a) < len(calls_b):
                x, sb = calls_b[call - 1]
                divergence = Divergence(call, None, sb, "a stopped", None, _call(x))
            else:
                x, sa = calls_a[call - 1]
                divergence = Divergence(call, sa, None, "b stopped", _call(x), None)
    summary_a, summary_b = a.summary(), b.summary()
    state = state_differences(
        StateDiff.from_delta(summary_a.state_diff or {}),
        StateDiff.from_delta(summary_b.state_diff or {}),
    )
    answers = (summary_a.final_answer, summary_b.final_answer)
    return CassetteDiff(divergence, state, answers if answers[0] != answers[1] else None)


def state_differences(a: StateDiff, b: StateDiff) -> list[str]:
    """One line per row whose change differs between A and B."""
    lines = []
    for table in sorted(a.touched() | b.touched()):
        ta, tb = a.table(table), b.table(table)
        for what in ("inserted", "deleted", "updated"):
            rows_a: dict[Any, Any] = getattr(ta, what)
            rows_b: dict[Any, Any] = getattr(tb, what)
            for key in sorted(set(rows_a) | set(rows_b), key=repr):
                name = f"{table}[{key[0] if len(key) == 1 else key!r}]"
                if key not in rows_b:
                    lines.append(f"{name} {what} by A only: {_row(rows_a[key])}")
                elif key not in rows_a:
                    lines.append(f"{name} {what} by B only: {_row(rows_b[key])}")
                else:
                    changes = value_diff(_row_data(rows_a[key]), _row_data(rows_b[key]))
                    if changes:
                        lines.append(f"{name} {what} differently: {'; '.join(changes)}")
    return lines


def _row_data(row: Any) -> Any:
    return {"before": row.before, "after": row.after} if hasattr(row, "after") else row


def _row(row: Any) -> str:
    return json.dumps(_row_data(row), default=str)
