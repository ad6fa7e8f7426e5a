"""Integrations: importing tau-bench trajectories and tau2-bench domains.

Private: use what ``replay`` exports.
"""

from ._domains import (
    DOMAINS,
    airline_tools,
    collection_models,
    database,
    db_class,
    gold_hash,
    quiet,
    retail_tools,
    tasks,
    tau2_hash,
    tools_for,
)
from ._tau2 import Tau2Import, import_tau2
from ._taubench import TauBenchImport, import_tau_bench_trajectories

__all__ = [
    "DOMAINS",
    "Tau2Import",
    "TauBenchImport",
    "airline_tools",
    "collection_models",
    "database",
    "db_class",
    "gold_hash",
    "import_tau2",
    "import_tau_bench_trajectories",
    "quiet",
    "retail_tools",
    "tasks",
    "tau2_hash",
    "tools_for",
]
