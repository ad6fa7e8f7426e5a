"""Modes: how a trial runs, as entries in a registry.

A mode is a row of the channel table (what the LLM, tools, other HTTP, the
user and the world do) plus the steps that run a trial of a ``TrialPlan``.
The built-in modes, registered when any name of this package but ``Environment``,
``as_function`` and ``load_callable`` is first used:

- ``review``: nothing runs; the recorded outcome (fixture + recorded net
  delta, final answer) is graded again.
- ``offline``: the agent runs; every tool call is answered from the recorded
  trial, identical calls in recorded order, their deltas applied to a fresh
  world; an unseen call raises ``FixtureUnsupported`` (verdict
  ``unsupported``). The LLM is frozen (served from the cassette) or live.
- ``sandbox``: a fresh world; tools really execute; HTTP may reach only the
  LLM endpoint's host; secrets are hidden from the agent.
- ``record``: as the agent really runs (any host, its environment): the
  cassettes are recordings for the other modes.

Every mode writes a cassette for the trial (review: the judge's calls only)
and grades the same ``Trial``. The agent contract:
``agent(instruction: str, env: Environment) -> str`` (the final answer), or
the same ``async def``.

A new mode is ``register(Mode(name, summary, channels, steps, ...))``: the
runner, the CLI's ``--mode`` and the pytest plugin read what it declares.
"""

import importlib as _importlib
import typing as _typing

if _typing.TYPE_CHECKING:
    from ._async import wait_for as wait_for
    from ._base import REGISTRY, Mode, register
    from ._drive import Steps, drive, drive_async
    from ._environment import Environment, as_function
    from ._guard import Guard
    from ._guards import LimitExceeded as LimitExceeded
    from ._guards import Limits
    from ._load import load_callable
    from ._offline import offline, offline_steps
    from ._plan import (
        NO_LLM_URL,
        Agent,
        Prices,
        RubricJudge,
        ToolFactory,
        TrialPlan,
        cassette_name,
        judge_cassette,
    )
    from ._review import review
    from ._run import run_trial, trial_steps
    from ._sandbox import sandbox, sandbox_steps
    from ._trial import TrialResult, recorded_base_url, trial_cost

# Each name loads on first use. A walled child (``replay.agents._child``, one per zygote)
# needs only the light three, and imports none of the harness (0.4 s a zygote); any other
# name registers the built-in modes first (``_registered``).
_EXPORTS = {
    "Agent": "._plan",
    "Environment": "._environment",
    "Guard": "._guard",
    "LimitExceeded": "._guards",
    "Limits": "._guards",
    "Mode": "._base",
    "NO_LLM_URL": "._plan",
    "Prices": "._plan",
    "REGISTRY": "._base",
    "RubricJudge": "._plan",
    "Steps": "._drive",
    "ToolFactory": "._plan",
    "TrialPlan": "._plan",
    "TrialResult": "._trial",
    "as_function": "._environment",
    "cassette_name": "._plan",
    "drive": "._drive",
    "drive_async": "._drive",
    "judge_cassette": "._plan",
    "load_callable": "._load",
    "offline": "._offline",
    "offline_steps": "._offline",
    "recorded_base_url": "._trial",
    "register": "._base",
    "review": "._review",
    "run_trial": "._run",
    "sandbox": "._sandbox",
    "sandbox_steps": "._sandbox",
    "trial_cost": "._trial",
    "trial_steps": "._run",
    "wait_for": "._async",
}
_LIGHT = frozenset({"._environment", "._guard", "._load"})


def __getattr__(name: str) -> object:
    if name not in _EXPORTS:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    if _EXPORTS[name] not in _LIGHT:
        _importlib.import_module("._registered", __name__)
    value = getattr(_importlib.import_module(_EXPORTS[name], __name__), name)
    globals()[name] = value
    return value


# Exported (``_EXPORTS``) for replay's other stages; not the public API.
_SIBLINGS = ("LimitExceeded", "wait_for")

__all__ = [
    "NO_LLM_URL",
    "REGISTRY",
    "Agent",
    "Environment",
    "Guard",
    "Limits",
    "Mode",
    "Prices",
    "RubricJudge",
    "Steps",
    "ToolFactory",
    "TrialPlan",
    "TrialResult",
    "as_function",
    "cassette_name",
    "drive",
    "drive_async",
    "judge_cassette",
    "load_callable",
    "offline",
    "offline_steps",
    "recorded_base_url",
    "register",
    "review",
    "run_trial",
    "sandbox",
    "sandbox_steps",
    "trial_cost",
    "trial_steps",
]
