"""The CI gate: does a candidate run hold under thresholds, against a baseline or on its own?"""

from __future__ import annotations

import json
import xml.etree.ElementTree as ET
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, NamedTuple

from recorder import ConfigError

from ._compare import CaseChange, diff_runs
from ._report import CaseReport, RunReport, build_report
from ._store import Store

VARIABLE_PINS = ("agent", "model", "settings", "llm")
"""Pins a comparison may vary: the variable under test (one, unless --vary names more)."""


@dataclass(frozen=True)
class Thresholds:
    """What the candidate must meet. None: not checked."""

    min_pass1: float | None = None
    min_pass_k: tuple[int, float] | None = None
    """(k, minimum suite pass^k)."""
    max_drop: float | None = None
    """Largest allowed fall of suite pass^1 from the baseline."""
    critical_tag: str = "critical"
    """Cases with this tag may not newly fail."""
    max_unsupported: float | None = None
    """Largest allowed share of unsupported and error trials in the candidate."""
    max_failing_critical: int | None = None
    """Most cases with the critical tag allowed a trial that does not pass (0: every
    trial of every critical case passes); needs no baseline."""

    def absolute(self) -> list[str]:
        """The thresholds given that need no baseline (the candidate alone), as options."""
        given = {
            "--min-pass1": self.min_pass1,
            "--min-pass-k": self.min_pass_k,
            "--max-unsupported": self.max_unsupported,
            "--max-failing-critical": self.max_failing_critical,
        }
        return [option for option, value in given.items() if value is not None]


class GateCheck(NamedTuple):
    """One threshold of the gate."""

    holds: bool
    text: str
    """What was compared, with the candidate's value: ``suite pass^1 0.750 >= 0.9``."""
    name: str
    """The check without the candidate's value, the same from run to run (a JUnit testcase)."""


@dataclass(frozen=True)
class GateResult:
    """The gate's verdict with its reasons."""

    holds: bool
    checks: list[GateCheck]
    """Each threshold: whether it held, and what was compared."""
    notes: list[str] = field(default_factory=list)
    changes: list[CaseChange] = field(default_factory=list)
    """Each case in both runs (with a baseline)."""
    cases: list[CaseReport] = field(default_factory=list)
    """Each case of the candidate, when there was no baseline (``changes`` is then empty)."""


def pin_differences(a: dict[str, Any], b: dict[str, Any]) -> dict[str, str]:
    """Pins whose values differ, each with a short description of how."""
    out = {}
    for name in sorted(set(a) | set(b)):
        x, y = a.get(name), b.get(name)
        if x == y:
            continue
        if isinstance(x, dict) and isinstance(y, dict):
            keys = [k for k in sorted(set(x) | set(y)) if x.get(k) != y.get(k)]
            out[name] = ", ".join(f"{k}: {x.get(k)!r} -> {y.get(k)!r}" for k in keys)
        else:
            out[name] = f"{x!r} -> {y!r}"
    return out


def gate(
    store: Store,
    baseline: str | None,
    candidate: str,
    thresholds: Thresholds,
    *,
    vary: tuple[str, ...] = (),
) -> GateResult:
    """Check ``candidate`` against ``baseline``, or on its own when ``baseline`` is None.

    With a baseline, no case with the critical tag may newly fail, besides the
    thresholds given. Without one, only the thresholds that need none are
    checked (``Thresholds.absolute``: minimum pass^1 and pass^k, the largest
    unsupported share, critical cases failing), and at least one must be given.

    Raises:
        ConfigError: A run is missing; the pins differ beyond the variable
            under test (``vary``; by default any one of ``VARIABLE_PINS``);
            without a baseline, ``max_drop`` is given, or no threshold is.
    """
    if baseline is None:
        return _absolute(store, candidate, thresholds)
    runs = {name: store.run(name) for name in (baseline, candidate)}
    for name, run in runs.items():
        if run is None:
            raise ConfigError(f"no run {name!r} in {store.path}")
    differing = pin_differences(runs[baseline]["pins"], runs[candidate]["pins"])  # type: ignore[index]
    allowed = set(vary) if vary else set(VARIABLE_PINS)
    beyond = {k: v for k, v in differing.items() if k not in allowed}
    varied = [k for k in differing if k in allowed]
    if beyond or (not vary and len(varied) > 1):
        what = beyond or {k: differing[k] for k in varied}
        detail = "; ".join(f"{k} ({v})" for k, v in what.items())
        raise ConfigError(
            f"runs {baseline!r} and {candidate!r} differ in more than the variable under test: "
            f"{detail}; pass --vary for each pin meant to differ"
        )
    base, cand = build_report(store, baseline), build_report(store, candidate)
    changes = diff_runs(store, baseline, candidate)
    checks = _pass_checks(cand, thresholds)
    if thresholds.max_drop is not None:
        before, pass1 = base.suite.pass_hat.get(1), cand.suite.pass_hat.get(1)
        drop = None if before is None or pass1 is None else before - pass1
        ok = drop is not None and drop <= thresholds.max_drop
        checks.append(
            GateCheck(
                ok,
                f"pass^1 drop {_num(drop)} (from {_num(before)}) <= {thresholds.max_drop}",
                f"pass^1 drop <= {thresholds.max_drop}",
            )
        )
    critical = {
        c.case_id
        for c in cand.cases
        if thresholds.critical_tag in _tags(store, candidate, c.case_id)
    }
    fallen = [c.case_id for c in changes if c.newly_failing and c.case_id in critical]
    name = f"no {thresholds.critical_tag} case newly fails"
    shown = name + (f" (newly failing: {', '.join(fallen)})" if fallen else "")
    checks.append(GateCheck(not fallen, shown, name))
    checks += _share_checks(store, cand, thresholds)
    dropped = [c.case_id for c in changes if (c.change or 0) < 0]
    notes = [f"cases that dropped: {', '.join(dropped)}"] if dropped else []
    return GateResult(all(c.holds for c in checks), checks, notes, changes)


def _absolute(store: Store, candidate: str, thresholds: Thresholds) -> GateResult:
    """The gate without a baseline: the thresholds on the candidate alone."""
    if thresholds.max_drop is not None:
        raise ConfigError("--max-drop is a fall from a baseline: give --baseline RUN too")
    if not thresholds.absolute():
        raise ConfigError(
            "a gate without --baseline needs a threshold on the candidate: give --min-pass1, "
            "--min-pass-k K=VALUE, --max-unsupported or --max-failing-critical "
            "(or --baseline RUN to compare with)"
        )
    cand = build_report(store, candidate)
    checks = [*_pass_checks(cand, thresholds), *_share_checks(store, cand, thresholds)]
    return GateResult(all(c.holds for c in checks), checks, cases=cand.cases)


def _pass_checks(cand: RunReport, thresholds: Thresholds) -> list[GateCheck]:
    """The candidate's suite pass^1 and pass^k against their minimums."""
    checks = []
    if thresholds.min_pass1 is not None:
        pass1 = cand.suite.pass_hat.get(1)
        ok = pass1 is not None and pass1 >= thresholds.min_pass1
        text = f"suite pass^1 {_num(pass1)} >= {thresholds.min_pass1}"
        checks.append(GateCheck(ok, text, f"suite pass^1 >= {thresholds.min_pass1}"))
    if thresholds.min_pass_k is not None:
        k, minimum = thresholds.min_pass_k
        value = cand.suite.pass_hat.get(k)
        checks.append(
            GateCheck(
                value is not None and value >= minimum,
                f"suite pass^{k} {_num(value)} >= {minimum}",
                f"suite pass^{k} >= {minimum}",
            )
        )
    return checks


def _share_checks(store: Store, cand: RunReport, thresholds: Thresholds) -> list[GateCheck]:
    """The candidate's critical cases failing and its unsupported share, against their caps."""
    checks = []
    if thresholds.max_failing_critical is not None:
        tag, most = thresholds.critical_tag, thresholds.max_failing_critical
        failing = [
            c.case_id
            for c in cand.cases
            if tag in _tags(store, cand.name, c.case_id) and not _all_pass(c)
        ]
        name = f"{tag} cases with a trial not passing <= {most}"
        shown = f"{tag} cases with a trial not passing {len(failing)} <= {most}"
        shown += f" (failing: {', '.join(failing)})" if failing else ""
        checks.append(GateCheck(len(failing) <= most, shown, name))
    if thresholds.max_unsupported is not None:
        totals = cand.suite.totals
        trials = sum(totals.values())
        share = (totals.get("unsupported", 0) + totals.get("error", 0)) / trials if trials else 0.0
        checks.append(
            GateCheck(
                share <= thresholds.max_unsupported,
                f"unsupported + error share {share:.3f} <= {thresholds.max_unsupported}",
                f"unsupported + error share <= {thresholds.max_unsupported}",
            )
        )
    return checks


def _all_pass(case: CaseReport) -> bool:
    """Whether every trial of the case passed (an error or unsupported one does not)."""
    verdicts = case.metrics.counts.verdicts
    return verdicts["pass"] == sum(verdicts.values())


def _tags(store: Store, run: str, case_id: str) -> list[str]:
    for trial in store.trials(run):
        if trial["case_id"] == case_id and trial["tags"]:
            return list(json.loads(trial["tags"]))
    return []


def _num(value: float | None) -> str:
    return "-" if value is None else f"{value:.3f}"


def write_junit(result: GateResult, path: Path, candidate: str) -> None:
    """Write JUnit XML: one testcase per case and one per threshold, counts that match.

    With a baseline, a case fails when it newly fails or its pass rate dropped
    significantly; without one (``result.cases``), when a trial of it did not
    pass. A threshold fails when it does not hold. The cases are ``classname`` ``replay.cases``,
    the thresholds ``replay.gate`` (named without the candidate's values, so a CI
    system follows each from run to run).
    """
    cases: list[tuple[str, str, tuple[str, str] | None]] = []
    for change in result.changes:
        failed = None
        if change.newly_failing or (change.significant and (change.change or 0) < 0):
            why = "newly failing" if change.newly_failing else "pass rate dropped"
            failed = (
                f"{change.case_id}: {why}",
                f"pass^1 {_num(change.pass1_a)} -> {_num(change.pass1_b)}; "
                f"read: replay show {change.failing_cassette}",
            )
        cases.append(("replay.cases", change.case_id, failed))
    for report in result.cases:
        verdicts = {v: n for v, n in report.metrics.counts.verdicts.items() if n}
        missed = sum(verdicts.values()) - verdicts.get("pass", 0)
        failed = None
        if missed:
            failed = (
                f"{report.case_id}: {missed} of {sum(verdicts.values())} trials did not pass",
                ", ".join(f"{n} {v}" for v, n in verdicts.items())
                + (
                    f"; read: replay show {report.failing_cassette}"
                    if report.failing_cassette
                    else ""
                ),
            )
        cases.append(("replay.cases", report.case_id, failed))
    for check in result.checks:
        cases.append(("replay.gate", check.name, None if check.holds else (check.text, check.text)))
    failures = sum(1 for *_, failed in cases if failed is not None)
    counts = {"tests": str(len(cases)), "failures": str(failures), "errors": "0", "skipped": "0"}
    name = f"replay gate {candidate}"
    root = ET.Element("testsuites", {"name": name, **counts})
    suite = ET.SubElement(root, "testsuite", {"name": name, **counts})
    for classname, case_name, failed in cases:
        case = ET.SubElement(suite, "testcase", classname=classname, name=case_name)
        if failed is not None:
            message, text = failed
            ET.SubElement(case, "failure", message=message).text = text
    path.parent.mkdir(parents=True, exist_ok=True)
    ET.ElementTree(root).write(path, encoding="utf-8", xml_declaration=True)
