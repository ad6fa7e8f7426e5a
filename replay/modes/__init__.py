"""Modes: how a trial runs, as entries in a registry.

A mode is a row of the channel table (what the LLM, tools, other HTTP, the
user and the world do) plus the steps that run a trial of a ``TrialPlan``.
The built-in modes, registered when this package is imported:

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

from . import _offline, _review, _sandbox
from ._async import wait_for as wait_for
from ._base import REGISTRY, Mode, register
from ._drive import Steps, drive, drive_async
from ._environment import Environment, as_function
from ._guards import Guard, Limits
from ._guards import LimitExceeded as LimitExceeded
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
    load_callable,
)
from ._review import review
from ._sandbox import sandbox, sandbox_steps
from ._trial import TrialResult, recorded_base_url, trial_cost

for _mode in (_review.MODE, _offline.MODE, _sandbox.MODE, _sandbox.RECORD):  # --help's order
    register(_mode)


def trial_steps(plan: TrialPlan) -> Steps[TrialResult]:
    """The plan's trial as steps, run by its mode (for a driver: ``drive``, ``drive_async``).

    Raises:
        ConfigError: No mode of the plan's name is registered.
    """
    return REGISTRY[plan.mode].steps(plan)


def run_trial(plan: TrialPlan) -> TrialResult:
    """Run and grade the plan's trial here (an async agent on the shared loop).

    Raises:
        ConfigError: No mode of the plan's name is registered.
    """
    return drive(trial_steps(plan))


# Bound above (``name as name``) for replay's other stages; not the public API.
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
