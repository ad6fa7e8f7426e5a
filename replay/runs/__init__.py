"""Runs: the run's spec, the driver loop, the unit of work, the executor backends, checking cases.

Private: use what ``replay`` exports. Importing the package registers every
executor backend (``_backend.BACKENDS``), whatever is imported first.
"""

from . import _dask, _processes, _ray
from ._backend import BACKENDS
from ._check import check_case
from ._drift import Regrade
from ._judge_check import MAX_FLIP, JudgeCheck, judge_check
from ._probes import PROBES, ProbeResult
from ._regrade import MAX_DRIFT, make_golden, regrade, regrade_golden
from ._runner import execute
from ._spec import (
    SETTINGS,
    AgentSettings,
    ExecutorSettings,
    FaultSettings,
    JudgeSettings,
    LlmSettings,
    RedactionSettings,
    RunSpec,
    UserSettings,
)

for _name, _backend in (  # --help's order
    ("local", _processes.local),
    ("ray", _ray.on_ray),
    ("dask", _dask.on_dask),
):
    BACKENDS.register(_name, _backend)

__all__ = [
    "BACKENDS",
    "MAX_DRIFT",
    "MAX_FLIP",
    "PROBES",
    "SETTINGS",
    "AgentSettings",
    "ExecutorSettings",
    "FaultSettings",
    "JudgeCheck",
    "JudgeSettings",
    "LlmSettings",
    "ProbeResult",
    "RedactionSettings",
    "Regrade",
    "RunSpec",
    "UserSettings",
    "check_case",
    "execute",
    "judge_check",
    "make_golden",
    "regrade",
    "regrade_golden",
]
