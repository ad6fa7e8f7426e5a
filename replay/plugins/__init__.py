"""Plugins: the one ``Registry`` type that modes, graders and executor backends use.

The lowest stage: it imports nothing of replay's. Installed packages reach each
registry through entry points (``GROUPS``; README, "Plugins"). It also holds
``printable``, the one rule for printing recorded text on a terminal, so that every
stage above can use it.
"""

from ._printable import printable
from ._registry import GROUPS, Registry

__all__ = ["GROUPS", "Registry", "printable"]
