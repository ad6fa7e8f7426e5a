"""What `replay report` shows first: the trials that did not pass by cause, worst first.

A crashed agent comes before the assertions it broke, and `replay show` shows where it raised.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from replay import FailureCause, GradeRecord, Store, TrialRecord, build_report, run_html
from replay.graders import Cause, Verdict
from replay.modes import Guard
from tests.helpers import replay


def test_a_crash_comes_before_the_assertions_it_broke_and_its_traceback_is_shown(
    tmp_path: Path,
) -> None:
    (tmp_path / "notes.sql").write_text("CREATE TABLE notes (id INTEGER PRIMARY KEY, text TEXT);\n")
    case = tmp_path / "c.yaml"
    case.write_text(
        "id: c\ninstruction: write two notes\nfixture: notes.sql\nassert:\n"
        '  - answer contains "done"\n  - notes.count() == 2\n  - "notes[1].text == \\"a\\""\n'
    )
    store = str(tmp_path / "r.db")
    module = "tests.cli.secret_agents"
    agent = ["--agent", f"{module}:crash", "--tools", f"{module}:make_tools"]
    code, _, err = replay(
        "run", str(case), "--run", "r", "-k", "2", "--store", store, *agent, "--isolation", "none",
        "--llm-url", "http://127.0.0.1:9/v1", "--no-llm-check",
    )  # fmt: skip
    assert code == 1, err  # the agent crashed (an error of cause agent)
    code, out, _ = replay("report", "r", "--store", store)
    reasons = [r.strip() for r in out.split("c failed because:")[1].strip().splitlines()]
    # The crash (one trial) before the assertions both trials fail.
    assert reasons[0].startswith("1 x agent: ") and "the agent fell over" in reasons[0]
    assert reasons[1].startswith("2 x ")
    # By cause: the crashed trial is an agent error, not one more failed assertion.
    assert "Failures by cause: assertion failed 1, agent error 1" in out
    causes = out.split("Failures by cause: ")[1].split("c failed because:")[0]
    assert (
        "agent error (1):\n    c#0  agent: agent raised builtins.RuntimeError: the agent fell over"
        in causes
    )
    (trial, _) = Store(store).trials("r")
    code, out, _ = replay("show", trial.cassette)
    assert "RuntimeError: the agent fell over" in out
    assert 'raise RuntimeError("the agent fell over")' in out  # the traceback's last frames
    assert "<summary>traceback</summary>" in run_html(Store(store), "r")


LONG = "reserve-widgets-for-alice-before-the-spring-sale-" + "x" * 40
"""A case id longer than any terminal column would leave it."""


def _trial(store: Store, case: str, idx: int, verdict: str, **row: Any) -> None:
    grades = tuple(
        GradeRecord(g, Verdict(v), veto=veto, evidence=(e,))
        for g, v, veto, e in row.get("grades", [])
    )
    cause = row.get("cause")
    trial = TrialRecord(
        case_id=case,
        idx=idx,
        verdict=Verdict(verdict),
        cassette="",
        cause=None if cause is None else Cause(cause),
        cause_detail=tuple(row.get("cause_detail", ())),
        guards=tuple(Guard(g) for g in row.get("guards", ())),
        grades=grades,
    )
    store.add_trial("r", trial)


MISS = (
    "fixture unsupported: POST http://127.0.0.1:40491/v1/chat/completions (1866 body bytes, "
    "via httpx); nearest recorded: same method and URL, 1383 body bytes, differing in "
    "messages[0].content: \"You keep a small shop's inventory. Check the stock before you "
    'reserve anything." -> "Reserve whatever is asked."'
)


def every_cause(path: Path) -> Store:
    """A run with one trial per failure cause (three infrastructure ones) and two passes.

    Each failing trial also fails an assertion, which must not be its cause unless
    nothing worse is.
    """
    assertion = ("state", "fail", False, "notes.count() == 2: expected 2, actual 0")
    forbidden = ("rule", "fail", True, "forbidden tool drop was called")
    violation = ("sandbox", "fail", True, "sandbox violation: connect prod:5432 (refused)")
    unsure = ("judge:tone", "unknown", False, "judge timed out after 30s")
    miss = ("replay", "unsupported", False, MISS)
    raised = ("polite", "error", False, "KeyError: 'x' (g.py:3)")
    crash = {"cause": "agent", "cause_detail": ["agent raised RuntimeError: boom"]}
    deadline = {"cause": "limit", "cause_detail": ["deadline"], "guards": ["memory", "timeout"]}
    memory = {"cause": "limit", "cause_detail": ["memory over 64 MB"], "guards": ["memory"]}
    rows: list[tuple[str, int, str, dict[str, Any]]] = [
        (LONG, 0, "fail", {"grades": [assertion]}),
        (LONG, 1, "fail", {"grades": [forbidden, assertion]}),
        (LONG, 2, "fail", {"grades": [assertion, violation, forbidden]}),
        (LONG, 3, "pass", {"grades": [("state", "pass", False, "ok")]}),
        ("b", 0, "unknown", {"grades": [unsure]}),
        ("b", 1, "error", {**crash, "grades": [assertion]}),
        ("b", 2, "error", deadline),
        ("b", 3, "error", memory),
        ("c", 0, "unsupported", {"grades": [miss, assertion]}),
        ("c", 1, "error", {"cause": "harness", "cause_detail": ["the worker died"]}),
        ("c", 2, "error", {"cause": "user", "cause_detail": ["the user said nothing"]}),
        ("c", 3, "error", {"grades": [raised]}),
        ("c", 4, "pass", {"grades": [("judge:tone", "fail", False, "rude")]}),  # advisory below
    ]
    store = Store(path)
    store.start_run("r", {}, {})
    for case, idx, verdict, row in rows:
        _trial(store, case, idx, verdict, **row)
    store.db.conn.execute("UPDATE grades SET advisory = 1 WHERE case_id = 'c' AND idx = 4")
    store.db.conn.commit()
    return store


EXPECTED = [
    ("assertion failed", [(LONG, 0)]),
    ("rule veto", [(LONG, 1)]),
    ("judge unknown", [("b", 0)]),
    ("agent error", [("b", 1)]),
    ("timeout", [("b", 2)]),
    ("limit", [("b", 3)]),
    ("sandbox violation", [(LONG, 2)]),
    ("unsupported", [("c", 0)]),
    ("infrastructure", [("c", 1), ("c", 2), ("c", 3)]),
]


def test_each_trial_that_did_not_pass_has_one_primary_cause(tmp_path: Path) -> None:
    report = build_report(every_cause(tmp_path / "r.db"), "r")
    assert [g.cause for g in report.causes] == list(FailureCause)
    got = [(g.name, [(t.case_id, t.idx) for t in g.trials]) for g in report.causes]
    assert got == EXPECTED
    assert [g.count for g in report.causes] == [len(trials) for _, trials in EXPECTED]
    details = {(t.case_id, t.idx): t.detail for g in report.causes for t in g.trials}
    assert details[("b", 1)] == "agent: agent raised RuntimeError: boom"
    assert details[(LONG, 2)] == "sandbox: sandbox violation: connect prod:5432 (refused)"
    assert details[(LONG, 1)] == "rule: forbidden tool drop was called"
    assert details[("c", 3)] == "polite: KeyError: 'x' (g.py:3)"


def test_report_json_lists_the_causes_with_counts_and_each_trials_cause(tmp_path: Path) -> None:
    every_cause(tmp_path / "r.db")
    code, out, err = replay("report", "r", "--store", str(tmp_path / "r.db"), "--json")
    assert code == 0, err
    data = json.loads(out)
    causes = [(c["cause"], [(t["case"], t["idx"]) for t in c["trials"]]) for c in data["causes"]]
    assert causes == EXPECTED
    assert [c["count"] for c in data["causes"]] == [1, 1, 1, 1, 1, 1, 1, 1, 3]
    failure = {(t["case"], t["idx"]): t["failure"] for t in data["trials"]}
    assert failure[("b", 1)] == "agent error" and failure[("c", 4)] is None


def test_the_terminal_report_groups_failures_by_cause_first(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("COLUMNS", raising=False)
    every_cause(tmp_path / "r.db")
    code, out, err = replay("report", "r", "--store", str(tmp_path / "r.db"))
    assert code == 0, err
    section = out.split("Failures by cause: ")[1]
    head, *lines = section.splitlines()
    assert head == (
        "assertion failed 1, rule veto 1, judge unknown 1, agent error 1, timeout 1, limit 1, "
        "sandbox violation 1, unsupported 1, infrastructure 3"
    )
    groups = [line.strip() for line in lines if line.startswith("  ") and line.endswith("):")]
    assert groups[:2] == ["assertion failed (1):", "rule veto (1):"]
    assert f"    {LONG}#2  sandbox: sandbox violation: connect prod:5432 (refused)" in lines
    assert "    b#1  agent: agent raised RuntimeError: boom" in lines
    # Before each case's evidence, and ids never cut off a terminal.
    assert out.index("Failures by cause") < out.index("failed because:")
    # A long miss loses its middle, not the values that differ at its end.
    (missed,) = [line for line in lines if line.startswith("    c#0  ")]
    assert missed.startswith("    c#0  replay: fixture unsupported: POST http://127.0.0.1")
    assert missed.endswith('-> "Reserve whatever is asked."') and out.count("…") == 1


def test_cases_come_worst_first_in_the_terminal_report(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("COLUMNS", raising=False)  # off a terminal: the table is never cut
    store = Store(tmp_path / "r.db")
    store.start_run("r", {}, {})
    verdicts = {
        "a-all-pass": ["pass", "pass"],
        "b-half": ["pass", "fail"],
        "c-errors": ["error", "error"],
        "d-pass-and-unsupported": ["pass", "unsupported"],
        "e-half-and-error": ["pass", "fail", "error"],
        "f-all-fail": ["fail", "fail"],
    }
    for case, seen in verdicts.items():
        for idx, verdict in enumerate(seen):
            _trial(store, case, idx, verdict)
    _, out, _ = replay("report", "r", "--store", str(tmp_path / "r.db"))
    rows = [line.split("│")[1].strip() for line in out.splitlines() if line.startswith("│ ")]
    assert rows == [
        "c-errors",  # nothing graded
        "f-all-fail",  # pass^1 0
        "e-half-and-error",  # pass^1 0.5, 2 trials not passing
        "b-half",
        "d-pass-and-unsupported",  # pass^1 1, one unsupported
        "a-all-pass",
    ]
