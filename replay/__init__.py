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
(``replay gate``), ``promote``, ``diff_cassettes`` / ``compare_runs``
(``replay diff``), ``plan`` (``replay plan``), ``noise`` (``replay noise``),
``suite_health`` and ``graduate``, ``check_case`` (``replay check-cases``),
``import_tau_bench_trajectories`` and ``import_tau2`` (``replay import``),
``build_report`` / ``run_html`` (``replay report``), ``view`` (``replay
view``); ``ExitCode`` says what the commands' exit statuses mean.

One trial is a ``TrialPlan`` run by its mode (``run_trial``); the modes are
entries of the public subpackage ``replay.modes`` (``review``, ``offline``,
``sandbox`` and ``record``; register more there). Graders live in the
public subpackage ``replay.graders``; the stub LLM in
``replay.stub_llm``; tau2-bench tools in ``replay.tau2``; the statistics
under every figure in ``replay.stats``. Every other module is private.
"""

import importlib as _importlib
import typing as _typing

if _typing.TYPE_CHECKING:
    from ._exit import ExitCode
    from .cases._case import Case, Scoring, Suite, ToolCallSpec, load_case
    from .cases._promote import Promoted, promote
    from .integrations._tau2 import Tau2Import, import_tau2
    from .integrations._taubench import TauBenchImport, import_tau_bench_trajectories
    from .mcp._proxy import McpServer
    from .modes import (
        Environment,
        Limits,
        ToolFactory,
        TrialPlan,
        TrialResult,
        load_callable,
        offline,
        review,
        run_trial,
        sandbox,
    )
    from .agents._command import AgentCommand
    from .results._calibration import JudgeAgreement, judge_agreement
    from .results._causes import CauseGroup, FailedTrial, FailureCause
    from .results._compare import CassetteDiff, Divergence, diff_cassettes
    from .results._gate import GateCheck, GateResult, Thresholds, gate, write_junit
    from .results._health import HealthFlag, graduate, suite_health
    from .results._metrics import (
        CaseCounts,
        CaseMetrics,
        SuiteMetrics,
        case_metrics,
        pass_at_k,
        pass_hat_k,
        suite_metrics,
        two_proportion_test,
    )
    from .results._noise import CaseNoise, NoiseFloor, noise
    from .results._paired import (
        CaseChange,
        PairedFigure,
        RunComparison,
        compare_counts,
        compare_runs,
        diff_runs,
    )
    from .results._plan import FigurePlan, Plan, PlanRow, plan
    from .results._report import CaseReport, RunReport, build_report, report_json
    from .results._store import Store
    from .runs._check import check_case
    from .runs._runner import execute
    from .runs._spec import (
        AgentSettings,
        ExecutorSettings,
        FaultSettings,
        JudgeSettings,
        LlmSettings,
        RedactionSettings,
        RunSpec,
        UserSettings,
    )
    from .views._html import cassette_html, run_html
    from .views._server import ViewServer, view
    from .worlds._diff import RowUpdate, StateDiff, TableDiff, value_diff
    from .worlds._world import Fixture, TrialConnection, World

# Exports load on first use, so `import replay.stub_llm` (stdlib only) and
# `replay --help` do not pay for pydantic, deepdiff and sqlite-utils.
_EXPORTS = {
    "Case": ".cases._case",
    "CaseChange": ".results._paired",
    "CaseNoise": ".results._noise",
    "CaseCounts": ".results._metrics",
    "CaseMetrics": ".results._metrics",
    "CaseReport": ".results._report",
    "CassetteDiff": ".results._compare",
    "CauseGroup": ".results._causes",
    "Divergence": ".results._compare",
    "Environment": ".modes",
    "ExitCode": "._exit",
    "FailedTrial": ".results._causes",
    "FailureCause": ".results._causes",
    "JudgeAgreement": ".results._calibration",
    "Limits": ".modes",
    "McpServer": ".mcp._proxy",
    "AgentCommand": ".agents._command",
    "Fixture": ".worlds._world",
    "GateCheck": ".results._gate",
    "GateResult": ".results._gate",
    "HealthFlag": ".results._health",
    "FigurePlan": ".results._plan",
    "NoiseFloor": ".results._noise",
    "PairedFigure": ".results._paired",
    "Plan": ".results._plan",
    "PlanRow": ".results._plan",
    "RunComparison": ".results._paired",
    "Promoted": ".cases._promote",
    "RowUpdate": ".worlds._diff",
    "RunReport": ".results._report",
    "AgentSettings": ".runs._spec",
    "ExecutorSettings": ".runs._spec",
    "FaultSettings": ".runs._spec",
    "JudgeSettings": ".runs._spec",
    "LlmSettings": ".runs._spec",
    "RunSpec": ".runs._spec",
    "RedactionSettings": ".runs._spec",
    "UserSettings": ".runs._spec",
    "ViewServer": ".views._server",
    "Scoring": ".cases._case",
    "StateDiff": ".worlds._diff",
    "Store": ".results._store",
    "Suite": ".cases._case",
    "SuiteMetrics": ".results._metrics",
    "TableDiff": ".worlds._diff",
    "Tau2Import": ".integrations._tau2",
    "TauBenchImport": ".integrations._taubench",
    "Thresholds": ".results._gate",
    "ToolCallSpec": ".cases._case",
    "TrialConnection": ".worlds._world",
    "ToolFactory": ".modes",
    "TrialPlan": ".modes",
    "TrialResult": ".modes",
    "World": ".worlds._world",
    "build_report": ".results._report",
    "case_metrics": ".results._metrics",
    "cassette_html": ".views._html",
    "check_case": ".runs._check",
    "diff_cassettes": ".results._compare",
    "diff_runs": ".results._paired",
    "compare_runs": ".results._paired",
    "compare_counts": ".results._paired",
    "execute": ".runs._runner",
    "judge_agreement": ".results._calibration",
    "noise": ".results._noise",
    "plan": ".results._plan",
    "gate": ".results._gate",
    "graduate": ".results._health",
    "import_tau2": ".integrations._tau2",
    "import_tau_bench_trajectories": ".integrations._taubench",
    "load_callable": ".modes",
    "load_case": ".cases._case",
    "offline": ".modes",
    "pass_at_k": ".results._metrics",
    "pass_hat_k": ".results._metrics",
    "promote": ".cases._promote",
    "report_json": ".results._report",
    "review": ".modes",
    "run_trial": ".modes",
    "run_html": ".views._html",
    "sandbox": ".modes",
    "suite_health": ".results._health",
    "suite_metrics": ".results._metrics",
    "two_proportion_test": ".results._metrics",
    "value_diff": ".worlds._diff",
    "view": ".views._server",
    "write_junit": ".results._gate",
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
    "AgentCommand",
    "AgentSettings",
    "Case",
    "CaseChange",
    "CaseCounts",
    "CaseMetrics",
    "CaseNoise",
    "CaseReport",
    "CassetteDiff",
    "CauseGroup",
    "Divergence",
    "Environment",
    "ExecutorSettings",
    "ExitCode",
    "FailedTrial",
    "FailureCause",
    "FaultSettings",
    "FigurePlan",
    "Fixture",
    "GateCheck",
    "GateResult",
    "HealthFlag",
    "JudgeAgreement",
    "JudgeSettings",
    "Limits",
    "LlmSettings",
    "McpServer",
    "NoiseFloor",
    "PairedFigure",
    "Plan",
    "PlanRow",
    "Promoted",
    "RedactionSettings",
    "RowUpdate",
    "RunComparison",
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
    "ViewServer",
    "World",
    "build_report",
    "case_metrics",
    "cassette_html",
    "check_case",
    "compare_counts",
    "compare_runs",
    "diff_cassettes",
    "diff_runs",
    "execute",
    "gate",
    "graduate",
    "import_tau2",
    "import_tau_bench_trajectories",
    "judge_agreement",
    "load_callable",
    "load_case",
    "noise",
    "offline",
    "pass_at_k",
    "pass_hat_k",
    "plan",
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
    "view",
    "write_junit",
]
