"""Plugins: the one ``Registry`` type that modes, graders and executor backends use.

The lowest stage: it imports nothing of replay's. Installed packages reach each
registry through entry points (``GROUPS``; README, "Plugins").
"""

from ._registry import GROUPS, Registry

__all__ = ["GROUPS", "Registry"]
