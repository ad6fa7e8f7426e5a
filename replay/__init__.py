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
    from .agents import AgentCommand
    from .cases import Case, Promoted, Scoring, Suite, ToolCallSpec, load_case, promote
    from .integrations import Tau2Import, TauBenchImport, import_tau2, import_tau_bench_trajectories
    from .mcp import McpServer
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
    from .results import (
        CaseChange,
        CaseCounts,
        CaseMetrics,
        CaseNoise,
        CaseReport,
        CassetteDiff,
        CauseGroup,
        Divergence,
        FailedTrial,
        FailureCause,
        FigurePlan,
        GateCheck,
        GateResult,
        HealthFlag,
        JudgeAgreement,
        NoiseFloor,
        PairedFigure,
        Plan,
        PlanRow,
        RunComparison,
        RunReport,
        Store,
        SuiteMetrics,
        Thresholds,
        build_report,
        case_metrics,
        compare_counts,
        compare_runs,
        diff_cassettes,
        diff_runs,
        gate,
        graduate,
        judge_agreement,
        noise,
        pass_at_k,
        pass_hat_k,
        plan,
        report_json,
        suite_health,
        suite_metrics,
        two_proportion_test,
        write_junit,
    )
    from .runs import (
        AgentSettings,
        ExecutorSettings,
        FaultSettings,
        JudgeSettings,
        LlmSettings,
        RedactionSettings,
        RunSpec,
        UserSettings,
        check_case,
        execute,
    )
    from .views import ViewServer, cassette_html, run_html, view
    from .worlds import Fixture, RowUpdate, StateDiff, TableDiff, TrialConnection, World, value_diff

# Exports load on first use, each from its subpackage's face, so `import
# replay.stub_llm` (stdlib only) and `replay --help` do not pay for pydantic,
# deepdiff and sqlite-utils.
_EXPORTS = {
    "Case": ".cases",
    "CaseChange": ".results",
    "CaseNoise": ".results",
    "CaseCounts": ".results",
    "CaseMetrics": ".results",
    "CaseReport": ".results",
    "CassetteDiff": ".results",
    "CauseGroup": ".results",
    "Divergence": ".results",
    "Environment": ".modes",
    "ExitCode": "._exit",
    "FailedTrial": ".results",
    "FailureCause": ".results",
    "JudgeAgreement": ".results",
    "Limits": ".modes",
    "McpServer": ".mcp",
    "AgentCommand": ".agents",
    "Fixture": ".worlds",
    "GateCheck": ".results",
    "GateResult": ".results",
    "HealthFlag": ".results",
    "FigurePlan": ".results",
    "NoiseFloor": ".results",
    "PairedFigure": ".results",
    "Plan": ".results",
    "PlanRow": ".results",
    "RunComparison": ".results",
    "Promoted": ".cases",
    "RowUpdate": ".worlds",
    "RunReport": ".results",
    "AgentSettings": ".runs",
    "ExecutorSettings": ".runs",
    "FaultSettings": ".runs",
    "JudgeSettings": ".runs",
    "LlmSettings": ".runs",
    "RunSpec": ".runs",
    "RedactionSettings": ".runs",
    "UserSettings": ".runs",
    "ViewServer": ".views",
    "Scoring": ".cases",
    "StateDiff": ".worlds",
    "Store": ".results",
    "Suite": ".cases",
    "SuiteMetrics": ".results",
    "TableDiff": ".worlds",
    "Tau2Import": ".integrations",
    "TauBenchImport": ".integrations",
    "Thresholds": ".results",
    "ToolCallSpec": ".cases",
    "TrialConnection": ".worlds",
    "ToolFactory": ".modes",
    "TrialPlan": ".modes",
    "TrialResult": ".modes",
    "World": ".worlds",
    "build_report": ".results",
    "case_metrics": ".results",
    "cassette_html": ".views",
    "check_case": ".runs",
    "diff_cassettes": ".results",
    "diff_runs": ".results",
    "compare_runs": ".results",
    "compare_counts": ".results",
    "execute": ".runs",
    "judge_agreement": ".results",
    "noise": ".results",
    "plan": ".results",
    "gate": ".results",
    "graduate": ".results",
    "import_tau2": ".integrations",
    "import_tau_bench_trajectories": ".integrations",
    "load_callable": ".modes",
    "load_case": ".cases",
    "offline": ".modes",
    "pass_at_k": ".results",
    "pass_hat_k": ".results",
    "promote": ".cases",
    "report_json": ".results",
    "review": ".modes",
    "run_trial": ".modes",
    "run_html": ".views",
    "sandbox": ".modes",
    "suite_health": ".results",
    "suite_metrics": ".results",
    "two_proportion_test": ".results",
    "value_diff": ".worlds",
    "view": ".views",
    "write_junit": ".results",
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
