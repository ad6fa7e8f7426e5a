"""Graders: turn a trial (case, transcript, state diff, world after) into verdicts.

Users extend this package: write a function ``Trial -> Grade`` and register
it with ``@grader("name")``, as the built-ins (``BUILT_IN``: ``replay``,
``sandbox``, ``rule``, ``state``, ``matches_reference``, ``judge``) are; every trial gets the
built-ins, and a case's ``graders:`` list or ``replay run --grader`` adds
yours (``MODULE:NAME`` imports the module that registers it). ``Judge``
grades a case's rubric with an LLM. ``combine`` turns a trial's grades into
its verdict.
"""

from . import _builtin  # noqa: F401  (registers the built-in graders)
from ._core import (
    BUILT_IN,
    PASS_SCORE,
    REGISTRY,
    VERSIONS,
    Cause,
    Grade,
    Grader,
    GraderUse,
    Outcome,
    Trial,
    Verdict,
    combine,
    grader,
    resolve,
    run_graders,
)
from ._expr import Approx, Assertion, Check, Context, SqliteWorld, WorldRef, WorldView
from ._judge import Dimension, Judge

__all__ = [
    "BUILT_IN",
    "PASS_SCORE",
    "REGISTRY",
    "VERSIONS",
    "Approx",
    "Assertion",
    "Cause",
    "Check",
    "Context",
    "Dimension",
    "Grade",
    "Grader",
    "GraderUse",
    "Judge",
    "Outcome",
    "SqliteWorld",
    "Trial",
    "Verdict",
    "WorldRef",
    "WorldView",
    "combine",
    "grader",
    "resolve",
    "run_graders",
]
