"""Results: the store and its records, metrics, report, gate, suite health, comparisons, judges.

Private: use what ``replay`` exports.
"""

from ._agreement import Disagreement, LabelAgreement, krippendorff_alpha, label_agreement
from ._calibration import (
    MIN_AGREEMENT,
    MIN_LABELS,
    JudgeAgreement,
    calibrated_judges,
    cohen_kappa,
    judge_agreement,
)
from ._causes import CauseGroup, FailedTrial
from ._compare import CassetteDiff, Divergence, diff_cassettes, step_numbers
from ._gate import GateCheck, GateResult, Thresholds, gate, write_junit
from ._health import MIN_TRIALS, SATURATED, HealthFlag, graduate, suite_health
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
from ._noise import CaseNoise, NoiseFloor, noise
from ._paired import (
    CaseChange,
    PairedFigure,
    RunComparison,
    compare_counts,
    compare_runs,
    diff_runs,
)
from ._plan import FigurePlan, Plan, PlanRow, plan
from ._record import (
    FailureCause,
    GradeRecord,
    LabelRecord,
    RunRecord,
    RunSummary,
    TrialRecord,
    TrialUsage,
)
from ._report import CaseReport, RunReport, build_report, report_json, worst_first
from ._sample import Sample, sample
from ._stats import (
    Interval,
    benjamini_hochberg,
    case_interval,
    clustered_se,
    detectable,
    fisher_exact,
    naive_se,
    paired_interval,
    suite_interval,
    trial_variance,
    wilson_interval,
)
from ._store import DEFAULT_PATH, JudgeCheckRecord, Store

__all__ = [
    "DEFAULT_PATH",
    "MIN_AGREEMENT",
    "MIN_LABELS",
    "MIN_TRIALS",
    "SATURATED",
    "CaseChange",
    "CaseCounts",
    "CaseMetrics",
    "CaseNoise",
    "CaseReport",
    "CassetteDiff",
    "CauseGroup",
    "Disagreement",
    "Divergence",
    "FailedTrial",
    "FailureCause",
    "FigurePlan",
    "GateCheck",
    "GateResult",
    "GradeRecord",
    "HealthFlag",
    "Interval",
    "JudgeAgreement",
    "JudgeCheckRecord",
    "LabelAgreement",
    "LabelRecord",
    "NoiseFloor",
    "PairedFigure",
    "Plan",
    "PlanRow",
    "RunComparison",
    "RunRecord",
    "RunReport",
    "RunSummary",
    "Sample",
    "Store",
    "SuiteMetrics",
    "Thresholds",
    "TrialRecord",
    "TrialUsage",
    "benjamini_hochberg",
    "build_report",
    "calibrated_judges",
    "case_interval",
    "case_metrics",
    "clustered_se",
    "cohen_kappa",
    "compare_counts",
    "compare_runs",
    "detectable",
    "diff_cassettes",
    "diff_runs",
    "fisher_exact",
    "gate",
    "graduate",
    "judge_agreement",
    "krippendorff_alpha",
    "label_agreement",
    "naive_se",
    "noise",
    "paired_interval",
    "pass_at_k",
    "pass_hat_k",
    "plan",
    "report_json",
    "sample",
    "step_numbers",
    "suite_health",
    "suite_interval",
    "suite_metrics",
    "trial_variance",
    "two_proportion_test",
    "wilson_interval",
    "worst_first",
    "write_junit",
]
