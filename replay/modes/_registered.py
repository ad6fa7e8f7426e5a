"""The built-in modes, registered: imported by the package's face before it gives a name."""

from __future__ import annotations

from . import _offline, _review, _sandbox
from ._base import register

for _mode in (_review.MODE, _offline.MODE, _sandbox.MODE, _sandbox.RECORD):  # --help's order
    register(_mode)
