"""Graders: turn (case, transcript, state diff) into verdicts. Users extend this package.

So far: state assertions (``Assertion``), checked against a ``Context``
(the world after a trial, its ``StateDiff``, the final answer).
"""

from ._expr import Approx, Assertion, Check, Context, SqliteWorld, WorldView

__all__ = ["Approx", "Assertion", "Check", "Context", "SqliteWorld", "WorldView"]
