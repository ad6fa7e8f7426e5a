"""Runs: the run's spec, the driver loop, the unit of work, the executor backends, checking cases.

Private: use what ``replay`` exports. Importing the package registers every
executor backend (``_backend.BACKENDS``), whatever is imported first.
"""

from . import _dask, _processes, _ray  # noqa: F401  (each registers its backend)
from ._check import check_case
from ._runner import execute
from ._spec import (
    AgentSettings,
    ExecutorSettings,
    FaultSettings,
    JudgeSettings,
    LlmSettings,
    RedactionSettings,
    RunSpec,
    UserSettings,
)

__all__ = [
    "AgentSettings",
    "ExecutorSettings",
    "FaultSettings",
    "JudgeSettings",
    "LlmSettings",
    "RedactionSettings",
    "RunSpec",
    "UserSettings",
    "check_case",
    "execute",
]
