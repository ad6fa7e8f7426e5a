"""`replay suite-health` and `replay graduate`."""

from __future__ import annotations

from pathlib import Path

from replay import Store, Suite, TrialRecord, load_case
from replay.graders import Verdict
from tests.helpers import REPO, replay


def store_with(path: Path, runs: dict[str, list[tuple[str, str, str]]]) -> str:
    """Write runs of (case, suite, verdict) trials straight into a store."""
    store = Store(path)
    for name, trials in runs.items():
        store.start_run(name, {}, {})
        for idx, (case, suite, verdict) in enumerate(trials):
            record = TrialRecord(
                case_id=case, idx=idx, suite=Suite(suite), verdict=Verdict(verdict)
            )
            store.add_trial(name, record)
    return str(path)


def test_flags_with_their_evidence(tmp_path: Path) -> None:
    trial = [("easy", "capability", "pass")] * 3 + [("broken", "capability", "fail")] * 4
    path = store_with(tmp_path / "r.db", {"r1": trial, "r2": trial, "r3": trial})
    code, out, _ = replay("suite-health", "--store", path)
    assert code == 0
    assert (
        "never-passes: broken: 0 of 12 trials passed (runs r1, r2, r3): "
        "the task or its grader is probably broken"
    ) in out
    assert (
        "graduate: easy: pass^3 = 1: 9 of 9 trials passed over the last 3 runs (r1, r2, r3)" in out
    )
    assert "saturated" not in out
    only_easy = store_with(tmp_path / "e.db", {"a": trial[:3], "b": trial[:3], "c": trial[:3]})
    _, out, _ = replay("suite-health", "--store", only_easy)
    assert "saturated: capability: 100.0% of 9 capability trials passed" in out
    _, out, _ = replay("suite-health", "a", "b", "--store", only_easy)
    assert "graduate" not in out  # two runs are not three


def test_graduate_moves_a_capability_case(tmp_path: Path) -> None:
    capability = tmp_path / "cases" / "capability"
    capability.mkdir(parents=True)
    (tmp_path / "cases" / "fixture.sql").write_text(
        (REPO / "examples/shop/fixture.sql").read_text()
    )
    text = (REPO / "examples/shop/cases/refund-4812.yaml").read_text()
    case = capability / "refund.yaml"
    case.write_text(text.replace("suite: regression", "suite: capability"))
    code, out, _ = replay("graduate", str(case))
    moved = tmp_path / "cases" / "regression" / "refund.yaml"
    assert code == 0 and out.strip() == f"graduated: {moved}"
    assert not case.exists() and load_case(moved).suite.value == "regression"
    code, _, err = replay("graduate", str(moved))
    assert code == 2 and "is not a capability case" in err
