"""The gate's JUnit XML (``replay gate --junit``): a testcase per case and per check."""

from __future__ import annotations

import datetime as dt
import socket
import xml.etree.ElementTree as ET
from collections.abc import Mapping
from pathlib import Path

from ._files import write_whole
from ._gate import GateResult


def write_junit(result: GateResult, path: Path, candidate: str) -> None:
    """Write JUnit XML: one testcase per case and one per check, counts that match.

    It reports failures exactly when the gate does not hold. A check's testcase
    fails when the check does not hold. A case's testcase fails only when a
    check that does not hold names it (``GateCheck.cases``): a critical case
    newly failing, a critical case ``--max-failing-critical`` counts, a case whose
    pass^1 fell when ``--max-drop`` is broken; every other case passes, whatever
    its trials (a low suite pass^1 fails its check alone). Each case's testcase
    carries in ``<system-out>`` its verdict counts, pass^1 (baseline -> candidate,
    with a baseline) and the ``replay show CASSETTE`` command for a trial that did
    not pass. The cases are ``classname`` ``replay.cases``, the checks
    ``replay.gate`` (named without the candidate's values, so a CI system follows
    each from run to run). Durations are not measured (``time="0"``).
    """
    blamed: dict[str, list[str]] = {}
    for check in result.checks:
        if not check.holds:
            for case_id in check.cases:
                blamed.setdefault(case_id, []).append(check.name)
    cases: list[tuple[str, str, str | None, str | None]] = []
    """(classname, name, failure message or None, text)"""
    for case_id, summary in _case_summaries(result):
        checks = blamed.get(case_id)
        message = f"{case_id} fails: {'; '.join(checks)}" if checks else None
        cases.append(("replay.cases", case_id, message, summary))
    for check in result.checks:
        cases.append(("replay.gate", check.name, None if check.holds else check.text, None))
    failures = sum(1 for _, _, message, _ in cases if message is not None)
    counts = {"tests": str(len(cases)), "failures": str(failures), "errors": "0", "time": "0"}
    name = f"replay gate {candidate}"
    root = ET.Element("testsuites", {"name": name, **counts})
    suite = ET.SubElement(
        root,
        "testsuite",
        {
            "name": name,
            **counts,
            "skipped": "0",
            "timestamp": dt.datetime.now(dt.timezone.utc).strftime("%Y-%m-%dT%H:%M:%S"),
            "hostname": socket.gethostname() or "localhost",
        },
    )
    for classname, case_name, message, text in cases:
        case = ET.SubElement(suite, "testcase", classname=classname, name=case_name, time="0")
        if message is not None:
            ET.SubElement(case, "failure", message=message).text = text or message
        if text is not None:
            ET.SubElement(case, "system-out").text = text
    xml = ET.tostring(root, encoding="utf-8", xml_declaration=True)
    write_whole(path, xml)  # a CI reading it never sees half a report


def _case_summaries(result: GateResult) -> list[tuple[str, str]]:
    """Each case with its verdict counts, pass^1 and where to read a trial that did not pass."""
    out = []
    for change in result.changes:
        text = (
            f"verdicts {_verdicts(change.b.verdicts)} (baseline: {_verdicts(change.a.verdicts)}); "
            f"pass^1 {_num(change.pass1_a)} -> {_num(change.pass1_b)}"
        )
        out.append((change.case_id, text + _read(change.failing_cassette)))
    for report in result.cases:
        verdicts = report.metrics.counts.verdicts
        text = f"verdicts {_verdicts(verdicts)}; pass^1 {_num(report.metrics.pass_hat.get(1))}"
        out.append((report.case_id, text + _read(report.failing_cassette)))
    return out


def _verdicts(verdicts: Mapping[str, int]) -> str:
    return ", ".join(f"{n} {v}" for v, n in verdicts.items() if n) or "no trials"


def _read(cassette: str | None) -> str:
    return f"; read: replay show {cassette}" if cassette else ""


def _num(value: float | None) -> str:
    return "-" if value is None else f"{value:.3f}"
