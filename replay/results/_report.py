"""A run's report: per-case counts and pass^k, suite means, and why trials failed."""

from __future__ import annotations

import functools
from collections import Counter
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from recorder import ConfigError

from ..cases import Expects
from ..graders import Cause
from ._causes import CauseGroup
from ._json_text import Rendered, Text, json_text, write_json
from ._metrics import (
    CONFIDENCE,
    CaseCounts,
    CaseMetrics,
    ShareSummary,
    SuiteMetrics,
    case_metrics,
    share_summary,
    suite_of,
)
from ._record import TrialRecord
from ._rows import UNDECLARED, failed_texts, read_rows, trial_texts
from ._store import Store
from ._summaries import CaseSummary
from ._tooluse import ToolUse

DIRECTIONS = (Expects.ACT.value, Expects.REFRAIN.value, UNDECLARED)
"""The directions, in the order reports list them."""


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
    expects: str = UNDECLARED
    """``act``, ``refrain`` or ``undeclared``: the direction its trials declare (the last
    declared wins)."""
    partial: ShareSummary | None = None
    """The spread of its graded trials' partial credit (the share of assertions held), when
    they record it (``scoring: weighted`` or ``hybrid``)."""


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
    causes: list[CauseGroup] = field(default_factory=list)
    """Every failure cause, in ``FailureCause`` order (empty ones too), each with the trials
    it is the primary cause of: the trials that did not pass, one cause each."""
    directions: dict[str, SuiteMetrics] = field(default_factory=dict)
    """pass^k and pass@k over the cases of each direction (``act``, ``refrain``,
    ``undeclared``; those the run has, in that order), with intervals as the suite's."""
    partial: ShareSummary | None = None
    """The spread of partial credit over every graded trial that records it, and the mean
    of its cases' means."""
    store: Store | None = field(default=None, repr=False, compare=False)
    """The store the report was read from (where ``trials`` come from)."""
    _trials: list[TrialRecord] | None = field(default=None, repr=False, compare=False)

    @property
    def trials(self) -> list[TrialRecord]:
        """Every trial, by case and index, as the store holds it, with its grades.

        Read from the store when first asked for (a report itself reads no trial record:
        a 100,000-trial run's take seconds).
        """
        if self._trials is None:
            read = self.store.trials(self.name) if self.store is not None else []
            object.__setattr__(self, "_trials", read)
        return self._trials  # type: ignore[return-value]

    def by_direction(self) -> list[tuple[str, int, SuiteMetrics, list[int]]]:
        """Each direction the run has: its name, cases, figures, and the k its cases all reach.

        (Past that k, a mean over fewer cases could rise with k: reports stop there, as the
        suite's figures do.)
        """
        out = []
        for name, metrics in self.directions.items():
            cases = sum(c.expects == name for c in self.cases)
            graded = cases - len(metrics.excluded)
            ks = [k for k in sorted(metrics.pass_hat) if metrics.cases_used.get(k, 0) == graded]
            out.append((name, cases, metrics, ks))
        return out


def direction(trials: Iterable[TrialRecord]) -> str:
    """A case's direction from its trials: the last one declared, else ``undeclared``.

    (A trial that could not run, or one stored before store version 5, declares none.)
    """
    declared = [t.expects for t in trials if t.expects is not None]
    return declared[-1].value if declared else UNDECLARED


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


def no_run(store: Store, name: str) -> ConfigError:
    """The error for a run the store does not hold, naming those it does."""
    known = ", ".join(store.runs()) or "none"
    return ConfigError(f"no run {name!r} in {store.path} (runs: {known})")


def build_report(store: Store, name: str, *, confidence: float = CONFIDENCE) -> RunReport:
    """Compute the report of a stored run (intervals at ``confidence``).

    Raises:
        ConfigError: No such run in the store.
    """
    run = store.run(name)
    if run is None:
        raise no_run(store, name)
    # What is counted, the store counted as the trials were stored; the rest is read from
    # a few columns of the trials' rows (``_rows``), never their records.
    summaries = {s.case_id: s for s in store.case_summaries(name)}
    rows = read_rows(store.db.conn, name)
    cases = []
    counts: list[CaseMetrics] = []
    directions: dict[str, list[CaseMetrics]] = {}
    shares: dict[str, list[float]] = {}
    guards: Counter[str] = Counter()
    for case in rows.cases:
        summary = summaries[case.case_id]
        count = CaseCounts(case.case_id, {v.value: n for v, n in summary.verdicts.items()})
        metrics = case_metrics(count, confidence=confidence)  # (once: the means reuse it)
        counts.append(metrics)
        case_guards = {g.value: n for g, n in summary.guards.items()}
        guards.update(case_guards)
        directions.setdefault(case.direction, []).append(metrics)
        # Graded trials only, as pass rates count them: an unsupported trial's share is
        # of a replay cut short.
        if case.shares:
            shares[case.case_id] = case.shares
        cases.append(
            CaseReport(
                case.case_id,
                case.suite,
                metrics,
                _worst_first(Counter(dict(summary.evidence))),
                case.failing_cassette,
                case.tool_use,
                Counter(dict(summary.user)).most_common(),
                _graders(summary),
                case_guards,
                case.direction,
                share_summary(case.shares),
            )
        )
    return RunReport(
        name,
        dict(run.pins),
        cases,
        _suite(counts, confidence),
        rows.tool_use,
        dict(guards),
        rows.causes,
        {d: _suite(directions[d], confidence) for d in DIRECTIONS if d in directions},
        share_summary([x for v in shares.values() for x in v], shares),
        store,
    )


def _suite(cases: list[CaseMetrics], confidence: float) -> SuiteMetrics:
    """``suite_metrics`` of cases whose metrics are computed (as ``suite_metrics`` would)."""
    return suite_of(cases, max((m.counts.n for m in cases), default=0), confidence)


def _graders(summary: CaseSummary) -> dict[str, dict[str, int]]:
    """Per grader, its grades per verdict (in the order its trials first show them)."""
    out: dict[str, dict[str, int]] = {}
    for grader, verdict, n in summary.grades:
        out.setdefault(grader, {})[verdict.value] = n
    return out


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


_Primary = Mapping[tuple[str, int], str]
"""Each trial that did not pass (case id, index): its primary cause's name."""


def report_json(report: RunReport) -> dict[str, Any]:
    """The report as JSON-ready data.

    ``causes`` lists every failure cause in order with its count and trials; each trial
    in ``trials`` names its own (``failure``, null for a pass). ``directions`` gives the
    suite's figures over the ``act``, ``refrain`` and ``undeclared`` cases apart;
    ``partial_credit`` (suite, case and trial) the share of assertions held, where cases
    scored ``weighted`` or ``hybrid`` record it (null elsewhere).
    """
    return _report_data(report, _listed)


def _report_data(
    report: RunReport,
    trials: Callable[[RunReport], list[dict[str, Any]] | Rendered],
    texts: dict[tuple[int, str], str] | None = None,
) -> dict[str, Any]:
    """The report's data, its trials as ``trials`` gives them (a list, or rendered).

    With ``texts``, each case's figures per k are rendered text, once per mapping (cases
    of equal counts share theirs: a 1,000-case run has some hundred).
    """
    suite = report.suite

    def per_k(figures: Mapping[int, Any]) -> Any:
        if texts is None:
            return _keyed(figures)

        def render(pad: str) -> str:
            key = (id(figures), pad)
            if key not in texts:
                texts[key] = json_text(_keyed(figures), pad)
            return texts[key]

        return Text(render)

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
        "directions": {
            name: _direction_json(metrics, cases)
            for name, cases, metrics, _ in report.by_direction()
        },
        "partial_credit": _shares_json(report.partial),
        "causes": [
            {
                "cause": group.name,
                "count": group.count,
                "trials": [
                    {"case": t.case_id, "idx": t.idx, "detail": t.detail, "cassette": t.cassette}
                    for t in group.trials
                ]
                if texts is None
                else Rendered(functools.partial(failed_texts, group.trials)),
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
                "pass_hat": per_k(c.metrics.pass_hat),
                "pass_at": per_k(c.metrics.pass_at),
                "pass1_interval": list(c.metrics.pass1_ci) if c.metrics.pass1_ci else None,
                "pass_hat_interval": per_k(c.metrics.pass_hat_ci),
                "failures": [{"evidence": e, "trials": n} for e, n in c.failures],
                "user_failures": [{"evidence": e, "trials": n} for e, n in c.user_failures],
                "failing_cassette": c.failing_cassette,
                "graders": c.graders,
                "guards": c.guards,
                "tool_use": c.tool_use.to_json(),
                "expects": c.expects,
                "partial_credit": _shares_json(c.partial),
            }
            for c in report.cases
        ],
        "trials": trials(report),
    }


def _keyed(figures: Mapping[int, Any]) -> dict[str, Any]:
    """Figures per k as JSON holds them: keys as text, intervals as lists."""
    return {str(k): list(v) if isinstance(v, tuple) else v for k, v in figures.items()}


def report_json_text(report: RunReport, write: Callable[[str], object]) -> None:
    """Write ``json.dumps(report_json(report), indent=2)``, in pieces, each trial as it goes.

    Each trial is written from its row in the store, as it is read (a 100,000-trial
    run's trials are never all held, as records or as JSON data).
    """
    write_json(_report_data(report, _streamed, {}), write)


def _listed(report: RunReport) -> list[dict[str, Any]]:
    primary = {(t.case_id, t.idx): g.name for g in report.causes for t in g.trials}
    return [_trial_json(primary, t) for t in report.trials]


def _streamed(report: RunReport) -> list[dict[str, Any]] | Rendered:
    store = report.store
    if store is None:
        return _listed(report)
    return Rendered(lambda pad: trial_texts(store.db.conn, report.name, pad))


def _trial_json(primary: _Primary, t: TrialRecord) -> dict[str, Any]:
    return {
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
        "expects": t.expects.value if t.expects is not None else None,
        "partial_credit": _credit_json(t),
    }


def _direction_json(metrics: SuiteMetrics, cases: int) -> dict[str, Any]:
    """One direction's figures, keyed as the suite's are."""
    return {
        "cases": cases,
        "pass_hat": {str(k): v for k, v in metrics.pass_hat.items()},
        "pass_at": {str(k): v for k, v in metrics.pass_at.items()},
        "pass_hat_interval": {str(k): list(v) for k, v in metrics.pass_hat_ci.items()},
        "pass_at_interval": {str(k): list(v) for k, v in metrics.pass_at_ci.items()},
        "cases_used": {str(k): v for k, v in metrics.cases_used.items()},
        "excluded": list(metrics.excluded),
        "verdicts": dict(metrics.totals),
        "method": metrics.method,
    }


def _shares_json(summary: ShareSummary | None) -> dict[str, Any] | None:
    if summary is None:
        return None
    return {
        "trials": summary.trials,
        "mean": summary.mean,
        "min": summary.low,
        "q1": summary.q1,
        "median": summary.median,
        "q3": summary.q3,
        "max": summary.high,
        "cases": summary.cases,
        "case_mean": summary.case_mean,
    }


def _credit_json(trial: TrialRecord) -> dict[str, Any] | None:
    credit = trial.partial_credit
    if credit is None:
        return None
    return {"share": credit.share, "held": list(credit.held), "failed": list(credit.failed)}
