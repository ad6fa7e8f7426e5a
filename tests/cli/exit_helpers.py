"""Agents and a grader for the exit-code tests (tests/cli/test_exit_codes.py)."""

from __future__ import annotations

from typing import Any

from replay.graders import Grade, Trial, Verdict, grader


def crash(instruction: str, env: Any) -> str:
    """Raise: the trial is an error of cause agent."""
    raise RuntimeError("the agent broke on purpose")


def idle(instruction: str, env: Any) -> str:
    """Call nothing, change nothing: the refund case fails."""
    return "I did nothing."


@grader("undecided")
def undecided(trial: Trial) -> Grade:
    """Cannot decide: the trial is unknown (judged by nobody)."""
    return Grade("undecided", Verdict.UNKNOWN, ("could not tell",))
