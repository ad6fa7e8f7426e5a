"""The terminal report of a large run lists the worst of it, and says where the rest is."""

from __future__ import annotations

from pathlib import Path

import pytest

from replay import GradeRecord, Store, TrialRecord
from replay.graders import Verdict
from replay.views import _terminal
from tests.helpers import replay


def _store(path: Path, cases: int, trials: int) -> None:
    """Case i passes trials from index i on (case-0 passes all, the last fewest)."""
    store = Store(path)
    store.start_run("r", {}, {"mode": "review"})
    for i in range(cases):
        for idx in range(trials):
            passed = idx >= i
            grade = GradeRecord(
                "state",
                Verdict.PASS if passed else Verdict.FAIL,
                evidence=() if passed else (f"case {i} trial {idx} missed",),
            )
            store.add_trial(
                "r",
                TrialRecord(
                    case_id=f"case-{i}",
                    idx=idx,
                    verdict=grade.verdict,
                    cassette=f"c{i}/{idx}.cassette",
                    grades=(grade,),
                ),
            )
    store.finish_run("r")


def test_a_small_run_is_reported_whole(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("COLUMNS", raising=False)
    _store(tmp_path / "r.db", 4, 4)
    code, out, _ = replay("report", "r", "--store", str(tmp_path / "r.db"))
    assert code == 0
    assert "…" not in out and "more" not in out
    assert all(f"case-{i}#0  state: case {i} trial 0 missed" in out for i in range(1, 4))
    assert all(f"case-{i} failed because:" in out for i in range(1, 4))


def test_a_large_run_lists_its_worst_cases_and_trials_and_says_where_the_rest_is(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("COLUMNS", raising=False)
    monkeypatch.setattr(_terminal, "CASES_TABLED", 3)
    monkeypatch.setattr(_terminal, "TRIALS_LISTED", 4)
    monkeypatch.setattr(_terminal, "CASES_LISTED", 2)
    _store(tmp_path / "r.db", 6, 6)  # 15 failing trials: case-5 fails 5, case-4 4...
    code, out, _ = replay("report", "r", "--store", str(tmp_path / "r.db"))
    assert code == 0
    table = out.split("suite pass^k")[0]
    assert [f"case-{i}" in table for i in range(6)] == [False, False, False, True, True, True]
    assert "… 3 more cases, none worse than those above: every case in " in table
    causes = out.split("Failures by cause: ")[1].split("failed because:")[0]
    listed = [line.split()[0] for line in causes.splitlines() if line.startswith("    case-")]
    assert listed == ["case-5#0", "case-5#1", "case-5#2", "case-5#3"]  # the worst case's
    assert "    … 11 more (those above are the worst cases'): every one in " in causes
    assert "`replay report r --json` (causes), or `replay view`" in causes
    shown = [line for line in out.splitlines() if line.endswith(" failed because:")]
    assert shown == ["case-5 failed because:", "case-4 failed because:"]
    assert "… 3 more cases' evidence: every case's in `replay report r --json`" in out
