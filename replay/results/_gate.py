"""The CI gate: does a candidate run hold against a baseline, under thresholds?"""

from __future__ import annotations

import json
import xml.etree.ElementTree as ET
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from recorder import ConfigError

from ._compare import CaseChange, diff_runs
from ._report import build_report
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


@dataclass(frozen=True)
class GateResult:
    """The gate's verdict with its reasons."""

    holds: bool
    checks: list[tuple[bool, str]]
    """Each threshold: whether it held, and what was compared."""
    notes: list[str] = field(default_factory=list)
    changes: list[CaseChange] = field(default_factory=list)


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
    baseline: str,
    candidate: str,
    thresholds: Thresholds,
    *,
    vary: tuple[str, ...] = (),
) -> GateResult:
    """Check ``candidate`` against ``baseline``.

    Raises:
        ConfigError: A run is missing, or the pins differ beyond the variable
            under test (``vary``; by default any one of ``VARIABLE_PINS``).
    """
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
    checks: list[tuple[bool, str]] = []
    pass1 = cand.suite.pass_hat.get(1)
    if thresholds.min_pass1 is not None:
        ok = pass1 is not None and pass1 >= thresholds.min_pass1
        checks.append((ok, f"suite pass^1 {_num(pass1)} >= {thresholds.min_pass1}"))
    if thresholds.min_pass_k is not None:
        k, minimum = thresholds.min_pass_k
        value = cand.suite.pass_hat.get(k)
        checks.append(
            (value is not None and value >= minimum, f"suite pass^{k} {_num(value)} >= {minimum}")
        )
    if thresholds.max_drop is not None:
        before = base.suite.pass_hat.get(1)
        drop = None if before is None or pass1 is None else before - pass1
        ok = drop is not None and drop <= thresholds.max_drop
        checks.append(
            (ok, f"pass^1 drop {_num(drop)} (from {_num(before)}) <= {thresholds.max_drop}")
        )
    critical = {
        c.case_id
        for c in cand.cases
        if thresholds.critical_tag in _tags(store, candidate, c.case_id)
    }
    fallen = [c.case_id for c in changes if c.newly_failing and c.case_id in critical]
    checks.append(
        (
            not fallen,
            f"no {thresholds.critical_tag} case newly fails"
            + (f" (newly failing: {', '.join(fallen)})" if fallen else ""),
        )
    )
    if thresholds.max_unsupported is not None:
        totals = cand.suite.totals
        trials = sum(totals.values())
        share = (totals.get("unsupported", 0) + totals.get("error", 0)) / trials if trials else 0.0
        checks.append(
            (
                share <= thresholds.max_unsupported,
                f"unsupported + error share {share:.3f} <= {thresholds.max_unsupported}",
            )
        )
    dropped = [c.case_id for c in changes if (c.change or 0) < 0]
    notes = [f"cases that dropped: {', '.join(dropped)}"] if dropped else []
    return GateResult(all(ok for ok, _ in checks), checks, notes, changes)


def _tags(store: Store, run: str, case_id: str) -> list[str]:
    for trial in store.trials(run):
        if trial["case_id"] == case_id and trial["tags"]:
            return list(json.loads(trial["tags"]))
    return []


def _num(value: float | None) -> str:
    return "-" if value is None else f"{value:.3f}"


def write_junit(result: GateResult, path: Path, candidate: str) -> None:
    """Write JUnit XML: one testcase per case (failing when it newly fails or dropped)."""
    failures = [
        c for c in result.changes if c.newly_failing or (c.significant and (c.change or 0) < 0)
    ]
    suite = ET.Element(
        "testsuite",
        name=f"replay gate {candidate}",
        tests=str(len(result.changes)),
        failures=str(len(failures)),
    )
    for change in result.changes:
        case = ET.SubElement(suite, "testcase", classname="replay", name=change.case_id)
        if change in failures:
            why = "newly failing" if change.newly_failing else "pass rate dropped"
            failure = ET.SubElement(case, "failure", message=f"{change.case_id}: {why}")
            failure.text = (
                f"pass^1 {_num(change.pass1_a)} -> {_num(change.pass1_b)}; "
                f"read: replay show {change.failing_cassette}"
            )
    gate_case = ET.SubElement(suite, "testcase", classname="replay", name="gate thresholds")
    for ok, text in result.checks:
        if not ok:
            ET.SubElement(gate_case, "failure", message=text)
    path.parent.mkdir(parents=True, exist_ok=True)
    ET.ElementTree(suite).write(path, encoding="utf-8", xml_declaration=True)
