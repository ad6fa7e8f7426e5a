"""Replay recorded agent sessions three ways and grade the world they leave behind.

```python
from replay import AgentSettings, LlmSettings, RunSpec, Store, execute, build_report

spec = RunSpec(name="nightly", cases=["cases/refund.yaml"], mode="sandbox", trials=8,
               agent=AgentSettings("myagent:agent", "myagent:make_tools"),
               llm=LlmSettings(url=URL))
execute(spec, Store())
print(build_report(Store(), "nightly").suite.pass_hat)
```

Every ``replay`` command is a thin layer over a function here: ``gate``
(``replay gate``), ``promote``, ``diff_cassettes`` / ``diff_runs``
(``replay diff``), ``suite_health`` and ``graduate``, ``check_case``
(``replay check-cases``), ``import_tau_bench_trajectories`` and
``import_tau2`` (``replay import``), ``build_report`` / ``run_html``
(``replay report``); ``ExitCode`` says what the commands' exit statuses mean.

One trial is a ``TrialPlan`` run by its mode (``run_trial``); the modes are
entries of the public subpackage ``replay.modes`` (``review``, ``offline``,
``sandbox`` and ``record``; register more there). Graders live in the
public subpackage ``replay.graders``; the stub LLM in
``replay.stub_llm``; tau2-bench tools in ``replay.tau2``. Every other module
is private.
"""

import importlib as _importlib
import typing as _typing

if _typing.TYPE_CHECKING:
    from ._case import Case, Scoring, Suite, ToolCallSpec, load_case
    from ._check import check_case
    from ._compare import CaseChange, CassetteDiff, Divergence, diff_cassettes, diff_runs
    from ._diff import RowUpdate, StateDiff, TableDiff, value_diff
    from ._exit import ExitCode
    from ._gate import GateResult, Thresholds, gate, write_junit
    from ._health import HealthFlag, graduate, suite_health
    from ._html import cassette_html, run_html
    from ._import_tau2 import Tau2Import, import_tau2
    from ._import_taubench import TauBenchImport, import_tau_bench_trajectories
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
    from ._promote import Promoted, promote
    from ._report import CaseReport, RunReport, build_report, report_json
    from ._runner import execute
    from ._spec import (
        AgentSettings,
        ExecutorSettings,
        FaultSettings,
        JudgeSettings,
        LlmSettings,
        RunSpec,
        UserSettings,
    )
    from ._store import Store
    from ._world import Fixture, TrialConnection, World
    from .modes import (
        Environment,
        ToolFactory,
        TrialPlan,
        TrialResult,
        load_callable,
        offline,
        review,
        run_trial,
        sandbox,
    )

# Exports load on first use, so `import replay.stub_llm` (stdlib only) and
# `replay --help` do not pay for pydantic, deepdiff and sqlite-utils.
_EXPORTS = {
    "Case": "._case",
    "CaseChange": "._compare",
    "CaseCounts": "._metrics",
    "CaseMetrics": "._metrics",
    "CaseReport": "._report",
    "CassetteDiff": "._compare",
    "Divergence": "._compare",
    "Environment": ".modes",
    "ExitCode": "._exit",
    "Fixture": "._world",
    "GateResult": "._gate",
    "HealthFlag": "._health",
    "Promoted": "._promote",
    "RowUpdate": "._diff",
    "RunReport": "._report",
    "AgentSettings": "._spec",
    "ExecutorSettings": "._spec",
    "FaultSettings": "._spec",
    "JudgeSettings": "._spec",
    "LlmSettings": "._spec",
    "RunSpec": "._spec",
    "UserSettings": "._spec",
    "Scoring": "._case",
    "StateDiff": "._diff",
    "Store": "._store",
    "Suite": "._case",
    "SuiteMetrics": "._metrics",
    "TableDiff": "._diff",
    "Tau2Import": "._import_tau2",
    "TauBenchImport": "._import_taubench",
    "Thresholds": "._gate",
    "ToolCallSpec": "._case",
    "TrialConnection": "._world",
    "ToolFactory": ".modes",
    "TrialPlan": ".modes",
    "TrialResult": ".modes",
    "World": "._world",
    "build_report": "._report",
    "case_metrics": "._metrics",
    "cassette_html": "._html",
    "check_case": "._check",
    "diff_cassettes": "._compare",
    "diff_runs": "._compare",
    "execute": "._runner",
    "gate": "._gate",
    "graduate": "._health",
    "import_tau2": "._import_tau2",
    "import_tau_bench_trajectories": "._import_taubench",
    "load_callable": ".modes",
    "load_case": "._case",
    "offline": ".modes",
    "pass_at_k": "._metrics",
    "pass_hat_k": "._metrics",
    "promote": "._promote",
    "report_json": "._report",
    "review": ".modes",
    "run_trial": ".modes",
    "run_html": "._html",
    "sandbox": ".modes",
    "suite_health": "._health",
    "suite_metrics": "._metrics",
    "two_proportion_test": "._metrics",
    "value_diff": "._diff",
    "write_junit": "._gate",
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
    "AgentSettings",
    "Case",
    "CaseChange",
    "CaseCounts",
    "CaseMetrics",
    "CaseReport",
    "CassetteDiff",
    "Divergence",
    "Environment",
    "ExecutorSettings",
    "ExitCode",
    "FaultSettings",
    "Fixture",
    "GateResult",
    "HealthFlag",
    "JudgeSettings",
    "LlmSettings",
    "Promoted",
    "RowUpdate",
    "RunReport",
    "RunSpec",
    "Scoring",
    "StateDiff",
    "Store",
    "Suite",
    "SuiteMetrics",
    "TableDiff",
    "Tau2Import",
    "TauBenchImport",
    "Thresholds",
    "ToolCallSpec",
    "ToolFactory",
    "TrialConnection",
    "TrialPlan",
    "TrialResult",
    "UserSettings",
    "World",
    "build_report",
    "case_metrics",
    "cassette_html",
    "check_case",
    "diff_cassettes",
    "diff_runs",
    "execute",
    "gate",
    "graduate",
    "import_tau2",
    "import_tau_bench_trajectories",
    "load_callable",
    "load_case",
    "offline",
    "pass_at_k",
    "pass_hat_k",
    "promote",
    "report_json",
    "review",
    "run_html",
    "run_trial",
    "sandbox",
    "suite_health",
    "suite_metrics",
    "two_proportion_test",
    "value_diff",
    "write_junit",
]
