"""Graders: turn a trial (case, transcript, state diff, world after) into verdicts.

Users extend this package: write a function ``Trial -> Grade`` and register
it with ``@grader("name")``, as the built-ins (``BUILT_IN``: ``replay``,
``sandbox``, ``rule``, ``state``, ``matches_reference``, ``judge``) are; every trial gets the
built-ins, and a case's ``graders:`` list or ``replay run --grader`` adds
yours (``MODULE:NAME`` imports the module that registers it). ``Judge``
grades a case's rubric with an LLM. ``combine`` turns a trial's grades into
its verdict.
"""

import importlib as _importlib
import typing as _typing

if _typing.TYPE_CHECKING:
    from ._builtin import agent_calls as agent_calls
    from ._builtin import step_order as step_order
    from ._case import GradedCase, ReferenceCall, RubricItem
    from ._core import AGENT_CAUSES as AGENT_CAUSES
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
    from ._core import TrialToolUse as TrialToolUse
    from ._deadline import DeadlinePassed as DeadlinePassed
    from ._deadline import post_within as post_within
    from ._expr import Assertion, AssertionSyntaxError
    from ._judge import Dimension, Judge
    from ._judge import trial_text as trial_text
    from ._pairwise import Restater as Restater
    from ._pairwise import pad_answer as pad_answer
    from ._pairwise import paraphrase as paraphrase
    from ._reference import MatchReference as MatchReference
    from ._reference import Reference as Reference
    from ._reference import key_value as key_value
    from ._reference import touched as touched
    from ._tooluse import trial_tool_use as trial_tool_use
    from ._values import Approx, Check, Context, WorldRef
    from ._world_view import SqliteWorld, WorldView

_EXPORTS: dict[str, str] = {
    "agent_calls": "._builtin",
    "step_order": "._builtin",
    "GradedCase": "._case",
    "ReferenceCall": "._case",
    "RubricItem": "._case",
    "AGENT_CAUSES": "._core",
    "BUILT_IN": "._core",
    "Cause": "._core",
    "combine": "._core",
    "Grade": "._core",
    "Grader": "._core",
    "grader": "._core",
    "GraderUse": "._core",
    "Outcome": "._core",
    "PASS_SCORE": "._core",
    "REGISTRY": "._core",
    "resolve": "._core",
    "run_graders": "._core",
    "Trial": "._core",
    "Verdict": "._core",
    "VERSIONS": "._core",
    "DeadlinePassed": "._deadline",
    "post_within": "._deadline",
    "Assertion": "._expr",
    "AssertionSyntaxError": "._expr",
    "Dimension": "._judge",
    "Judge": "._judge",
    "trial_text": "._judge",
    "pad_answer": "._pairwise",
    "paraphrase": "._pairwise",
    "Restater": "._pairwise",
    "key_value": "._reference",
    "MatchReference": "._reference",
    "Reference": "._reference",
    "touched": "._reference",
    "trial_tool_use": "._tooluse",
    "TrialToolUse": "._core",
    "Approx": "._values",
    "Check": "._values",
    "Context": "._values",
    "WorldRef": "._values",
    "SqliteWorld": "._world_view",
    "WorldView": "._world_view",
}
"""Each name and the module it is in, imported when first asked for: ``replay``'s exit
codes need ``Verdict`` and ``Cause``, not the judge's HTTP client or every grader."""

_UNREGISTERED = frozenset(
    {"AGENT_CAUSES", "Cause", "Grade", "PASS_SCORE", "TrialToolUse", "Verdict"}
)
"""Names given without first registering the built-in graders (``_builtin``); any other
(the registry, ``grader``, ``run_graders``...) sees them registered."""


def __getattr__(name: str) -> _typing.Any:
    if name in _EXPORTS:
        if name not in _UNREGISTERED:
            _importlib.import_module("._builtin", __name__)  # registers the built-ins
        value = getattr(_importlib.import_module(_EXPORTS[name], __name__), name)
        globals()[name] = value
        return value
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def __dir__() -> list[str]:
    return sorted([*globals(), *_EXPORTS])


# Bound above (``name as name``) for replay's other stages; not the public API.
_SIBLINGS = (
    "AGENT_CAUSES",
    "DeadlinePassed",
    "MatchReference",
    "Reference",
    "Restater",
    "TrialToolUse",
    "agent_calls",
    "key_value",
    "pad_answer",
    "paraphrase",
    "post_within",
    "step_order",
    "touched",
    "trial_text",
    "trial_tool_use",
)


__all__ = [
    "BUILT_IN",
    "PASS_SCORE",
    "REGISTRY",
    "VERSIONS",
    "Approx",
    "Assertion",
    "AssertionSyntaxError",
    "Cause",
    "Check",
    "Context",
    "Dimension",
    "Grade",
    "GradedCase",
    "Grader",
    "GraderUse",
    "Judge",
    "Outcome",
    "ReferenceCall",
    "RubricItem",
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
