"""Graders: turn a trial (case, transcript, state diff, world after) into verdicts.

Users extend this package: write a function ``Trial -> Grade`` and register
it with ``@grader("name")``, as the built-ins ``rule``, ``state`` and
``replay`` are. ``Judge`` grades a case's rubric with an LLM. ``combine``
turns a trial's grades into its verdict.
"""

from . import _builtin  # noqa: F401  (registers the built-in graders)
from ._core import (
    PASS_SCORE,
    REGISTRY,
    Grade,
    Grader,
    Outcome,
    Trial,
    Verdict,
    combine,
    grader,
    run_graders,
)
from ._expr import Approx, Assertion, Check, Context, SqliteWorld, WorldView
from ._judge import Dimension, Judge

__all__ = [
    "PASS_SCORE",
    "REGISTRY",
    "Approx",
    "Assertion",
    "Check",
    "Context",
    "Dimension",
    "Grade",
    "Grader",
    "Judge",
    "Outcome",
    "SqliteWorld",
    "Trial",
    "Verdict",
    "WorldView",
    "combine",
    "grader",
    "run_graders",
]
