"""The public API, name by name: what each package exports is exactly what it lists.

Modelled on httpx's tests/test_exported_members.py. Adding or removing a public
name means changing the literal list here, on purpose.
"""

from __future__ import annotations

import importlib
import inspect
from types import ModuleType

import pytest

import recorder
import replay
from replay import graders, modes, stats

RECORDER = [
    "DEFAULT_IGNORE_HOSTS",
    "FORMAT_VERSION",
    "HTTP_MATCHERS",
    "IGNORE_FIELD_PRESETS",
    "PLACEHOLDER",
    "SECRET_WORDS",
    "TOOL_MATCHERS",
    "USER_MATCHERS",
    "Captured",
    "Cassette",
    "CassetteCorrupt",
    "CassetteError",
    "CassetteNotFound",
    "CassetteVersionUnsupported",
    "ConfigError",
    "ErrorEvent",
    "ErrorInfo",
    "Event",
    "FixtureError",
    "FixtureUnsupported",
    "Footer",
    "Header",
    "Hooks",
    "HttpEvent",
    "HttpRequest",
    "HttpResponse",
    "LlmCall",
    "LlmToolCall",
    "Pins",
    "Playback",
    "RecordedAnswers",
    "Recording",
    "RecordingClosed",
    "RecordingFailed",
    "Redaction",
    "ReplayError",
    "RowChange",
    "SandboxViolation",
    "Secrets",
    "Source",
    "Stopped",
    "Timings",
    "Tool",
    "ToolEvent",
    "ToolRequest",
    "ToolSchemaError",
    "Usage",
    "UserEvent",
    "UserTurn",
    "ViolationEvent",
    "VolatileFields",
    "WarningEvent",
    "WorldDelta",
    "__version__",
    "holds_events",
    "keep_capture",
    "llm_call",
    "load_json",
    "net_delta",
    "patched",
    "playback",
    "read_cassette",
    "read_header",
    "record",
    "refusal",
    "secret_named",
    "tool",
    "tool_schema_hash",
    "unrecorded",
    "world_hash",
    "write_cassette",
]

REPLAY = [
    "AgentCommand",
    "AgentSettings",
    "ExecutorSettings",
    "FaultSettings",
    "JudgeAgreement",
    "JudgeCheck",
    "judge_check",
    "LabelAgreement",
    "Disagreement",
    "label_agreement",
    "krippendorff_alpha",
    "JudgeSettings",
    "LlmSettings",
    "McpServer",
    "RedactionSettings",
    "Regrade",
    "regrade",
    "regrade_golden",
    "make_golden",
    "UserSettings",
    # cases, worlds, state diffs
    "AssertionSyntaxError",
    "Case",
    "CaseFileError",
    "Expects",
    "Fixture",
    "RowUpdate",
    "Scoring",
    "StateDiff",
    "Suite",
    "TableDiff",
    "ToolCallSpec",
    "ToolFactory",
    "TrialPlan",
    "TrialConnection",
    "World",
    "load_case",
    "value_diff",
    # modes
    "Environment",
    "Limits",
    "TrialResult",
    "load_callable",
    "offline",
    "review",
    "run_trial",
    "sandbox",
    # runs, the store, metrics, reports
    "CaseCounts",
    "CaseMetrics",
    "CaseReport",
    "CauseGroup",
    "FailedTrial",
    "FailureCause",
    "GradeRecord",
    "LabelRecord",
    "PartialCredit",
    "RunRecord",
    "RunReport",
    "RunSpec",
    "RunSummary",
    "ShareSummary",
    "Store",
    "SuiteBalance",
    "SuiteMetrics",
    "TrialRecord",
    "TrialUsage",
    "build_report",
    "case_metrics",
    "execute",
    "pass_at_k",
    "pass_hat_k",
    "report_json",
    "run_html",
    "suite_metrics",
    "two_proportion_test",
    # what the other commands call
    "CaseChange",
    "CaseNoise",
    "CassetteDiff",
    "Divergence",
    "ExitCode",
    "GateCheck",
    "GateResult",
    "HealthFlag",
    "FigurePlan",
    "NoiseFloor",
    "PairedFigure",
    "Plan",
    "PlanRow",
    "Promoted",
    "RunComparison",
    "Tau2Import",
    "TauBenchImport",
    "Thresholds",
    "cassette_html",
    "check_case",
    "diff_cassettes",
    "diff_runs",
    "compare_counts",
    "compare_runs",
    "gate",
    "graduate",
    "import_tau2",
    "judge_agreement",
    "import_tau_bench_trajectories",
    "noise",
    "plan",
    "promote",
    "suite_balance",
    "suite_health",
    "write_junit",
    # replay view
    "ViewServer",
    "view",
    # replay sample
    "Sample",
    "sample",
]

GRADERS = [
    "BUILT_IN",
    "PASS_SCORE",
    "REGISTRY",
    "VERSIONS",
    "Approx",
    "Assertion",
    "AssertionSyntaxError",
    "Cause",
    "Check",
    "Context",
    "Dimension",
    "Grade",
    "GradedCase",
    "Grader",
    "GraderUse",
    "Judge",
    "Outcome",
    "ReferenceCall",
    "RubricItem",
    "SqliteWorld",
    "Trial",
    "Verdict",
    "WorldRef",
    "WorldView",
    "combine",
    "grader",
    "resolve",
    "run_graders",
]

MODES = [
    "NO_LLM_URL",
    "REGISTRY",
    "Agent",
    "Environment",
    "Guard",
    "Limits",
    "Mode",
    "Prices",
    "RubricJudge",
    "Steps",
    "ToolFactory",
    "TrialPlan",
    "TrialResult",
    "as_function",
    "cassette_name",
    "drive",
    "drive_async",
    "judge_cassette",
    "load_callable",
    "offline",
    "offline_steps",
    "recorded_base_url",
    "register",
    "review",
    "run_trial",
    "sandbox",
    "sandbox_steps",
    "trial_cost",
    "trial_steps",
]

STATS = [
    "Interval",
    "benjamini_hochberg",
    "case_interval",
    "clustered_se",
    "detectable",
    "fisher_exact",
    "naive_se",
    "paired_interval",
    "suite_interval",
    "trial_variance",
    "wilson_interval",
]

PACKAGES = [
    (recorder, RECORDER),
    (replay, REPLAY),
    (graders, GRADERS),
    (modes, MODES),
    (stats, STATS),
]
IDS = ["recorder", "replay", "replay.graders", "replay.modes", "replay.stats"]


def _public(module: ModuleType) -> set[str]:
    """What the module offers: its non-underscore attributes, its lazy exports, ``__version__``."""
    names = set(dir(module)) | set(getattr(module, "_EXPORTS", {}))
    return {
        n
        for n in names
        if (not n.startswith("_") or n == "__version__")
        and n != "annotations"  # `from __future__ import annotations`
        and not isinstance(getattr(module, n), ModuleType)  # subpackages and submodules
    }


@pytest.mark.parametrize(("module", "expected"), PACKAGES, ids=IDS)
def test_all_is_exactly_the_public_api(module: ModuleType, expected: list[str]) -> None:
    assert len(module.__all__) == len(set(module.__all__)), "a name is listed twice"
    listed, offered = set(module.__all__), _public(module) - set(getattr(module, "_SIBLINGS", ()))
    assert listed == set(expected), (
        f"{module.__name__}.__all__ changed: new {sorted(listed - set(expected))}, "
        f"gone {sorted(set(expected) - listed)}; if on purpose, update the list in this file"
    )
    assert offered == listed, (
        f"{module.__name__}: public but not in __all__ {sorted(offered - listed)}, "
        f"in __all__ but not importable {sorted(listed - offered)}"
    )


@pytest.mark.parametrize(("module", "expected"), PACKAGES, ids=IDS)
def test_every_exported_name_resolves_to_a_documented_object_of_that_name(
    module: ModuleType, expected: list[str]
) -> None:
    for name in module.__all__:
        value = getattr(module, name)
        if inspect.isclass(value) or inspect.isfunction(value):
            # An alias is fine when it aliases another export (recorder.playback = Playback).
            own = value.__name__
            assert own == name or getattr(module, own, None) is value, (
                f"{module.__name__}.{name} is {own}, which {module.__name__} does not export"
            )
            assert value.__module__.split(".")[0] == module.__name__.split(".")[0]
            assert inspect.getdoc(value), f"{module.__name__}.{name} has no docstring"


def test_nothing_private_is_exported() -> None:
    for module, _ in PACKAGES:
        assert [n for n in module.__all__ if n.startswith("_") and n != "__version__"] == []


def test_replay_exports_load_lazily_from_one_table() -> None:
    exports: dict[str, str] = replay._EXPORTS
    assert set(exports) == set(replay.__all__)
    for name, target in exports.items():  # each from its subpackage's face
        module = importlib.import_module(target, "replay")
        assert target.count(".") == 1, f"{name} is loaded from {target}, not a subpackage's face"
        assert (
            name in getattr(module, "__all__", ())
            or name in getattr(module, "_SIBLINGS", ())
            or (target == "._exit" and name in vars(module))
        ), f"{name} is not in {module.__name__}'s face"
    with pytest.raises(AttributeError, match="no attribute 'nope'"):
        replay.nope  # noqa: B018
