"""A run's report: per-case counts and pass^k, suite means, and why trials failed."""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

from recorder import ConfigError

from ..graders import Cause, Verdict
from ._causes import CauseGroup, cause_groups
from ._metrics import (
    CONFIDENCE,
    CaseCounts,
    CaseMetrics,
    SuiteMetrics,
    case_metrics,
    suite_metrics,
)
from ._record import TrialRecord
from ._store import Store
from ._tooluse import ToolUse, run_tool_use


@dataclass(frozen=True, slots=True)
class CaseReport:
    """One case of a run."""

    case_id: str
    suite: str
    metrics: CaseMetrics
    failures: list[tuple[str, int]]
    """Evidence of failed grades and of the agent's (or harness's) errors, with how many
    trials showed it, most frequent first."""
    failing_cassette: str | None
    """A cassette of a failing trial, to read first."""
    tool_use: ToolUse
    user_failures: list[tuple[str, int]]
    """Evidence of trials the simulated user failed (not the agent's fault), apart."""
    graders: dict[str, dict[str, int]]
    """Per grader that graded the case's trials (built-in or registered): verdict counts."""
    guards: dict[str, int]
    """Per limit that fired in the case's trials (``timeout``...): how many trials it cut."""


@dataclass(frozen=True, slots=True)
class RunReport:
    """A whole run."""

    name: str
    pins: dict[str, Any]
    cases: list[CaseReport]
    suite: SuiteMetrics
    tool_use: ToolUse
    guards: dict[str, int]
    """Per limit that fired in the run's trials: how many trials it cut (each an ``error``)."""
    trials: list[TrialRecord] = field(default_factory=list)
    """Every trial, by case and index, as the store holds it."""
    causes: list[CauseGroup] = field(default_factory=list)
    """Every failure cause, in ``FailureCause`` order (empty ones too), each with the trials
    it is the primary cause of: the trials that did not pass, one cause each."""


def worst_first(cases: Iterable[CaseReport]) -> list[CaseReport]:
    """Cases ordered worst first, as the terminal report and the viewer list them.

    Lowest pass^1 first, a case with no graded trial (every one error, unsupported or
    unknown) before any; then the case with more trials that did not pass (so one with
    errors or unsupported trials comes before an all-pass one of the same pass^1); then by id.
    """

    def key(case: CaseReport) -> tuple[float, int, str]:
        counts = case.metrics.counts
        pass1 = case.metrics.pass_hat.get(1, -1.0)
        return (pass1, counts.c - sum(counts.verdicts.values()), case.case_id)

    return sorted(cases, key=key)


def build_report(store: Store, name: str, *, confidence: float = CONFIDENCE) -> RunReport:
    """Compute the report of a stored run (intervals at ``confidence``).

    Raises:
        ConfigError: No such run in the store.
    """
    run = store.run(name)
    if run is None:
        known = ", ".join(store.runs()) or "none"
        raise ConfigError(f"no run {name!r} in {store.path} (runs: {known})")
    trials = store.trials(name)
    evidence: dict[str, Counter[str]] = {}
    user: dict[str, Counter[str]] = {}
    verdicts: dict[str, dict[str, Counter[str]]] = {}
    for trial in trials:  # an error no grade is to blame for: whose it is, or a limit
        if trial.cause is not None:
            into = user if trial.cause is Cause.USER else evidence
            for line in trial.cause_detail:
                into.setdefault(trial.case_id, Counter())[f"{trial.cause.value}: {line}"] += 1
    for trial in trials:
        for grade in trial.grades:
            by_grader = verdicts.setdefault(trial.case_id, {})
            by_grader.setdefault(grade.grader, Counter())[grade.verdict.value] += 1
            if grade.verdict is not Verdict.PASS:
                for line in grade.evidence:
                    evidence.setdefault(trial.case_id, Counter())[f"{grade.grader}: {line}"] += 1
    per_case, overall = run_tool_use(trials)
    cases = []
    counts = []
    for case_id in dict.fromkeys(t.case_id for t in trials):
        rows = [t for t in trials if t.case_id == case_id]
        count = CaseCounts.from_trials(case_id, [t.verdict for t in rows])
        counts.append(count)
        failing = next((t.cassette for t in rows if not t.passed and t.cassette), None)
        suite = rows[0].suite
        cases.append(
            CaseReport(
                case_id,
                suite.value if suite is not None else "",
                case_metrics(count, confidence=confidence),
                _worst_first(evidence.get(case_id, Counter())),
                failing,
                per_case[case_id],
                user.get(case_id, Counter()).most_common(),
                {g: dict(c) for g, c in verdicts.get(case_id, {}).items()},
                _guards(rows),
            )
        )
    return RunReport(
        name,
        dict(run.pins),
        cases,
        suite_metrics(counts, confidence=confidence),
        overall,
        _guards(trials),
        trials,
        cause_groups(trials),
    )


def _guards(trials: Iterable[TrialRecord]) -> dict[str, int]:
    """Per limit that fired in the trials, how many trials it cut."""
    return dict(Counter(guard.value for t in trials for guard in t.guards))


def _worst_first(lines: Counter[str]) -> list[tuple[str, int]]:
    """Why trials failed, worst first, each kind by count.

    Errors come first (the agent crashed, a limit, a server, the harness), then
    vetoes (a sandbox violation), then the graders' failures.
    """
    errors = {cause.value for cause in Cause}

    def rank(item: tuple[str, int]) -> tuple[int, int]:
        source = item[0].partition(":")[0]
        return (0 if source in errors else 1 if source == "sandbox" else 2, -item[1])

    return sorted(lines.most_common(), key=rank)


def report_json(report: RunReport) -> dict[str, Any]:
    """The report as JSON-ready data.

    ``causes`` lists every failure cause in order with its count and trials; each trial
    in ``trials`` names its own (``failure``, null for a pass).
    """
    suite = report.suite
    primary = {(t.case_id, t.idx): g.name for g in report.causes for t in g.trials}
    return {
        "run": report.name,
        "pins": report.pins,
        "suite": {
            "pass_hat": {str(k): v for k, v in suite.pass_hat.items()},
            "pass_at": {str(k): v for k, v in suite.pass_at.items()},
            "pass_hat_interval": {str(k): list(v) for k, v in suite.pass_hat_ci.items()},
            "pass_at_interval": {str(k): list(v) for k, v in suite.pass_at_ci.items()},
            "pass1_interval": list(suite.pass1_ci) if suite.pass1_ci else None,
            "pass1_se": suite.pass1_se,
            "pass1_se_naive": suite.pass1_se_naive,
            "confidence": suite.confidence,
            "method": suite.method,
            "cases_used": {str(k): v for k, v in suite.cases_used.items()},
            "excluded": list(suite.excluded),
            "verdicts": dict(suite.totals),
            "tool_use": report.tool_use.to_json(),
            "guards": report.guards,
        },
        "causes": [
            {
                "cause": group.name,
                "count": group.count,
                "trials": [
                    {"case": t.case_id, "idx": t.idx, "detail": t.detail, "cassette": t.cassette}
                    for t in group.trials
                ],
            }
            for group in report.causes
        ],
        "cases": [
            {
                "case": c.case_id,
                "suite": c.suite,
                "n": c.metrics.counts.n,
                "c": c.metrics.counts.c,
                "verdicts": dict(c.metrics.counts.verdicts),
                "pass_hat": {str(k): v for k, v in c.metrics.pass_hat.items()},
                "pass_at": {str(k): v for k, v in c.metrics.pass_at.items()},
                "pass1_interval": list(c.metrics.pass1_ci) if c.metrics.pass1_ci else None,
                "pass_hat_interval": {str(k): list(v) for k, v in c.metrics.pass_hat_ci.items()},
                "failures": [{"evidence": e, "trials": n} for e, n in c.failures],
                "user_failures": [{"evidence": e, "trials": n} for e, n in c.user_failures],
                "failing_cassette": c.failing_cassette,
                "graders": c.graders,
                "guards": c.guards,
                "tool_use": c.tool_use.to_json(),
            }
            for c in report.cases
        ],
        "trials": [
            {
                "case": t.case_id,
                "idx": t.idx,
                "verdict": t.verdict.value,
                "failure": primary.get((t.case_id, t.idx)),
                "cause": t.cause.value if t.cause is not None else None,
                "cause_detail": list(t.cause_detail),
                "guards": [guard.value for guard in t.guards],
                "cassette": t.cassette,
                "steps": t.usage.steps,
                "input_tokens": t.usage.input_tokens,
                "output_tokens": t.usage.output_tokens,
                "latency": t.usage.latency,
                "cost": t.usage.cost,
            }
            for t in report.trials
        ],
    }
