"""A trial's tool use, measured when it is graded: against the reference solution, and loops.

Tool selection and argument accuracy fail for different reasons (the prompt
chooses the tool, the schema shapes its arguments), so they are kept apart.
The run's figures (``replay.results._tooluse``) are means of these, read
from the store.
"""

from __future__ import annotations

import json
from collections import Counter
from typing import Any

from recorder import Cassette, ToolEvent

from ..worlds import canonical_numbers
from ._builtin import agent_calls, loops
from ._core import TrialToolUse

ABSTAIN_TAG = "abstain"
"""Cases with this tag have no suitable tool: the right move is no call (a question, a hand-off)."""


def _key(args: Any) -> str:
    # The same canonical arguments as offline matching: 35 and 35.0 are equal.
    return json.dumps(canonical_numbers(dict(args)), sort_keys=True, default=str)


def _accuracy(case: Any, calls: list[ToolEvent]) -> tuple[float, float | None]:
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


def trial_tool_use(case: Any, cassette: Cassette) -> TrialToolUse:
    """What the trial recorded in ``cassette`` did with its tools, against ``case``."""
    calls = agent_calls(cassette.events)
    selection = argument = None
    if case.reference_solution:
        selection, argument = _accuracy(case, calls)
    abstained = not calls if ABSTAIN_TAG in case.tags else None
    return TrialToolUse(len(calls), selection, argument, abstained, len(loops(calls)))
