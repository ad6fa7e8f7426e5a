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

import importlib as _importlib
import typing as _typing

if _typing.TYPE_CHECKING:
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

# Exports load on first use, so `import replay.stub_llm` (stdlib only) and
# `replay --help` do not pay for pydantic, deepdiff and sqlite-utils.
_EXPORTS = {
    "Case": "._case",
    "CaseCounts": "._metrics",
    "CaseMetrics": "._metrics",
    "CaseReport": "._report",
    "Environment": "._modes",
    "Fixture": "._world",
    "RowUpdate": "._diff",
    "RunReport": "._report",
    "RunSpec": "._runner",
    "Scoring": "._case",
    "StateDiff": "._diff",
    "Store": "._store",
    "Suite": "._case",
    "SuiteMetrics": "._metrics",
    "TableDiff": "._diff",
    "ToolCallSpec": "._case",
    "TrialConnection": "._world",
    "TrialResult": "._modes",
    "World": "._world",
    "build_report": "._report",
    "case_metrics": "._metrics",
    "execute": "._runner",
    "load_callable": "._modes",
    "load_case": "._case",
    "offline": "._modes",
    "pass_at_k": "._metrics",
    "pass_hat_k": "._metrics",
    "report_json": "._report",
    "review": "._modes",
    "sandbox": "._modes",
    "suite_metrics": "._metrics",
    "two_proportion_test": "._metrics",
    "value_diff": "._diff",
}


def __getattr__(name: str) -> _typing.Any:
    if name in _EXPORTS:
        value = getattr(_importlib.import_module(_EXPORTS[name], __name__), name)
        globals()[name] = value
        return value
    raise AttributeError(f"module 'replay' has no attribute {name!r}")


def __dir__() -> list[str]:
    return sorted([*globals(), *_EXPORTS])


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
