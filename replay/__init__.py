"""Replay recorded agent sessions three ways and grade the world they leave behind.

```python
from replay import RunSpec, Store, execute, build_report

spec = RunSpec(name="nightly", cases=["cases/refund.yaml"], mode="sandbox", trials=8,
               agent="myagent:agent", tools="myagent:make_tools", llm_url=URL)
execute(spec, Store())
print(build_report(Store(), "nightly").suite.pass_hat)
```

Graders live in the public subpackage ``replay.graders``; the stub LLM in
``replay.stub_llm``. Every other module is private.
"""

from ._case import Case, Scoring, Suite, ToolCallSpec, load_case
from ._diff import RowUpdate, StateDiff, TableDiff, value_diff
from ._metrics import (
    CaseCounts,
    CaseMetrics,
    SuiteMetrics,
    case_metrics,
    pass_at_k,
    pass_hat_k,
    suite_metrics,
    two_proportion_test,
)
from ._modes import Environment, TrialResult, load_callable, offline, review, sandbox
from ._report import CaseReport, RunReport, build_report, report_json
from ._runner import RunSpec, execute
from ._store import Store
from ._world import Fixture, TrialConnection, World

__all__ = [
    "Case",
    "CaseCounts",
    "CaseMetrics",
    "CaseReport",
    "Environment",
    "Fixture",
    "RowUpdate",
    "RunReport",
    "RunSpec",
    "Scoring",
    "StateDiff",
    "Store",
    "Suite",
    "SuiteMetrics",
    "TableDiff",
    "ToolCallSpec",
    "TrialConnection",
    "TrialResult",
    "World",
    "build_report",
    "case_metrics",
    "execute",
    "load_callable",
    "load_case",
    "offline",
    "pass_at_k",
    "pass_hat_k",
    "report_json",
    "review",
    "sandbox",
    "suite_metrics",
    "two_proportion_test",
    "value_diff",
]
