"""Which suite a case is in and which way it points: plain enums, read without the case model.

(The store's records carry them: reading a run's results needs them, not pydantic.)
"""

from __future__ import annotations

import enum


class Suite(str, enum.Enum):
    """Which suite a case belongs to."""

    CAPABILITY = "capability"
    """Hard cases; a low pass rate is expected."""
    REGRESSION = "regression"
    """Cases that must keep passing (near 100%)."""


class Expects(str, enum.Enum):
    """Which way a case points: the agent must act, or must refrain.

    A suite balances the two, since an agent tuned on one side regresses on the other
    (``replay suite-health`` counts them; ``replay report`` gives pass^k for each). A case
    that declares neither is *undeclared*, counted apart: it is not guessed to be ``act``
    (most cases are, but a guess would hide the imbalance the count is there to show).
    """

    ACT = "act"
    """Success is a change: the refund made, the ticket filed."""
    REFRAIN = "refrain"
    """Success is restraint: an unauthorised refund refused, no tool called when none fits
    (typically a state assertion that nothing changed)."""
