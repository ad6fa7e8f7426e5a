"""Checking cases: every case's reference solution must pass its own graders."""

from __future__ import annotations

import inspect
import tempfile
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from ..cases import Case
from ..modes import NO_LLM_URL, Environment, ToolFactory, TrialResult, sandbox


def check_case(case: Case, tools: ToolFactory) -> TrialResult | None:
    """Run the case's reference solution in sandbox mode with no LLM and grade it.

    Each reference call goes through ``tools`` on a fresh world; a call that
    raises is recorded and the solution goes on (a lookup that finds nothing
    can be part of it); ``reference_answer`` is the final answer. Every
    grader must pass the result (``replay check-cases``): one that does not
    says the case or its graders are wrong. No fault is injected.

    Args:
        case: The case (``load_case``).
        tools: The tool factory, taking the world's connection (``load_callable``).

    A case with ``match_reference`` and no reference solution says that
    nothing should change: the empty solution is run and graded too (a
    tau2-bench task without gold actions).

    Returns:
        The graded trial, or None when the case has no reference solution
        (and no ``match_reference``).

    Raises:
        FixtureError: The case's starting world cannot be built.
    """
    if not case.reference_solution and case.match_reference is None:
        return None
    calls: Sequence[Any] = case.reference_solution

    async def reference(instruction: str, env: Environment) -> str:
        for call in calls:
            arguments: Mapping[str, Any] = call.args
            try:
                result = env.call_tool(call.tool, arguments)
                if inspect.isawaitable(result):  # an async tool
                    await result
            except Exception:
                continue  # (recorded in the cassette), as tau2-bench's gold actions have
        return case.reference_answer or ""

    with tempfile.TemporaryDirectory() as tmp:
        # No LLM: the endpoint is never called; the sandbox would refuse any other host.
        return sandbox(
            case,
            reference,
            tools,
            Path(tmp) / "reference.cassette",
            llm_base_url=NO_LLM_URL,
        )
