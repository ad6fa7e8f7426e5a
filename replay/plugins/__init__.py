"""Plugins: the one ``Registry`` type that modes, graders and executor backends use.

The lowest stage: it imports nothing of replay's. Installed packages reach each
registry through entry points (``GROUPS``; README, "Plugins"). It also holds
``printable``, the one rule for printing recorded text on a terminal, so that every
stage above can use it; and ``lazy_face``, how a stage's face binds its names on first
use.
"""

from ._face import lazy_face
from ._printable import printable
from ._registry import GROUPS, Registry

__all__ = ["GROUPS", "Registry", "lazy_face", "printable"]
