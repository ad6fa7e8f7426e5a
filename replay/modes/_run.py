"""Run one trial of a plan by its mode."""

from __future__ import annotations

from ._base import REGISTRY
from ._drive import Steps, drive
from ._plan import TrialPlan
from ._trial import TrialResult


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
