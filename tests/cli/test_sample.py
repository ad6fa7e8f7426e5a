"""`replay sample` (``replay.sample``): trials to read, stratified by case and cause, seeded.

The run is skewed on purpose: case ``often`` fails 12 of 12 trials, ``rarely`` 1 of 4,
and ``twice`` fails 2 of 5 in two ways (a failed assertion and an agent error). Picking
at random would mostly show ``often``.
"""

from __future__ import annotations

import fnmatch
import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from replay import GradeRecord, Sample, Store, TrialRecord, sample
from replay.graders import Cause, Verdict
from tests.helpers import REPO, replay

RUN = "skewed"
FAILING = {
    ("often", "assertion failed"),
    ("rarely", "assertion failed"),
    ("twice", "assertion failed"),
    ("twice", "agent error"),
}
"""Every (case, failure cause) the run has."""


def skewed_store(path: Path) -> Store:
    """Run ``skewed``: 27 trials of 3 cases, failures skewed to ``often``; some neither."""
    store = Store(path)
    store.start_run(RUN, {}, {"mode": "offline"})

    def add(case: str, idx: int, verdict: Verdict, **more: Any) -> None:
        cassette = f"cassettes/{case}-{idx}.jsonl.zst"
        trial = TrialRecord(case_id=case, idx=idx, verdict=verdict, cassette=cassette, **more)
        store.add_trial(RUN, trial)

    wrong = (GradeRecord("state", Verdict.FAIL, evidence=("refunds.count() == 1: 2",)),)
    for idx in range(12):
        add("often", idx, Verdict.FAIL, grades=wrong)
    add("rarely", 0, Verdict.PASS)
    add("rarely", 1, Verdict.FAIL, grades=wrong)
    add("rarely", 2, Verdict.PASS)
    add("rarely", 3, Verdict.UNSUPPORTED)  # neither failed nor passed: never picked
    add("twice", 0, Verdict.PASS)
    add("twice", 1, Verdict.FAIL, grades=wrong)
    add("twice", 2, Verdict.ERROR, cause=Cause.AGENT, cause_detail=("agent raised KeyError",))
    add("twice", 3, Verdict.PASS)
    add("twice", 4, Verdict.ERROR, cause=Cause.HARNESS, cause_detail=("disk full",))  # not its
    for idx in range(6):
        add("steady", idx, Verdict.PASS)
    return store


def stratum(trial: TrialRecord) -> tuple[str, str]:
    why = trial.why_not_passed
    return trial.case_id, why[0].value if why else ""


def names(trials: tuple[TrialRecord, ...]) -> list[str]:
    return [f"{t.case_id}#{t.idx}" for t in trials]


@pytest.fixture
def store(tmp_path: Path) -> Store:
    return skewed_store(tmp_path / "results.db")


@pytest.mark.parametrize("seed", range(20))
def test_every_failing_case_and_cause_comes_before_any_repeats(store: Store, seed: int) -> None:
    picked = sample(store, RUN, failed=8, passed=4, seed=seed)
    assert picked.failing == 15 and picked.passing == 10  # 16 of 27: 2 are neither
    strata = [stratum(t) for t in picked.failed]
    assert len(set(names(picked.failed))) == len(picked.failed) == 8
    assert len({case for case, _ in strata[:3]}) == 3  # each failing case once, first
    assert set(strata[:4]) == FAILING  # then each (case, cause) once
    assert strata[4:] == [("often", "assertion failed")] * 4  # only `often` has more
    assert all(t.failed for t in picked.failed) and all(t.passed for t in picked.passed)
    assert {t.case_id for t in picked.passed[:3]} == {"rarely", "twice", "steady"}


def test_the_same_seed_picks_the_same_trials_and_another_may_not(store: Store) -> None:
    def picks(seed: int) -> list[str]:
        got = sample(store, RUN, failed=5, passed=5, seed=seed)
        return names(got.failed) + names(got.passed)

    assert picks(7) == picks(7)
    assert len({tuple(picks(seed)) for seed in range(10)}) > 1
    # Another process (another hash seed) picks the same: the shuffles are seeded by text.
    code = (
        "import json; from replay import Store, sample; "
        f"s = sample(Store({str(store.path)!r}), {RUN!r}, failed=5, passed=5, seed=7); "
        "print(json.dumps([f'{t.case_id}#{t.idx}' for t in s.trials]))"
    )
    env = {**os.environ, "PYTHONHASHSEED": "12345", "PYTHONPATH": str(REPO)}
    done = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, env=env, check=True
    )
    assert json.loads(done.stdout) == picks(7)


def test_fewer_trials_than_asked_and_none_asked(store: Store) -> None:
    picked = sample(store, RUN, failed=100, passed=0, seed=3)
    assert picked.passed == () and len(picked.failed) == 15
    assert picked.trials == picked.failed
    nothing = sample(store, RUN, failed=0, passed=0)
    assert nothing == Sample(RUN, 0, (), (), failing=15, passing=10)
    with pytest.raises(ValueError, match="cannot be negative"):
        sample(store, RUN, failed=-1)


def test_the_command_prints_each_pick_and_how_to_label_it(store: Store) -> None:
    code, out, err = replay("sample", RUN, "--store", str(store.path), "--seed", "4")
    assert code == 0, err
    picked = sample(store, RUN, seed=4)

    def line(t: TrialRecord) -> str:
        said = f"{t.verdict.value}, {t.why_not_passed[0].value}" if t.why_not_passed else "pass"
        return f"  {t.case_id}#{t.idx}  {said}  replay show {t.cassette}"

    assert out.splitlines() == [
        f"run {RUN}, seed 4",
        "failed: 5 of 15",
        *map(line, picked.failed),
        "passed: 5 of 10",
        *map(line, picked.passed),
        f"label: replay label {RUN} CASE#INDEX pass|fail|unsure --by NAME --store {store.path}",
        f"review queue: /runs/{RUN}/review?pass=5&fail=5&seed=4 on "
        f"`replay view --store {store.path}` (or rerun with --view)",
    ]
    said = {line(t).split("  ")[2] for t in picked.failed}
    assert said == {"fail, assertion failed", "error, agent error"}


def test_the_command_as_json(store: Store) -> None:
    code, out, err = replay(
        "sample", RUN, "--store", str(store.path), "--pass", "1", "--fail", "2", "--json"
    )
    assert code == 0, err
    data = json.loads(out)
    picked = sample(store, RUN, passed=1, failed=2)
    assert data == {
        **picked.to_json(),
        "label": f"replay label {RUN} CASE#INDEX pass|fail|unsure --by NAME --store {store.path}",
        "review": f"/runs/{RUN}/review?pass=1&fail=2&seed=0",
    }
    assert [p["picked"] for p in data["picks"]] == ["fail", "fail", "pass"]
    first = data["picks"][0]
    assert first["trial"] == f"{first['case_id']}#{first['idx']}"
    assert first["cause"] in {"assertion failed", "agent error"}


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["nope"], "error: no run 'nope' in *; see `replay runs`"),
        ([RUN, "--port", "8000"], "error: --port serves the review queue: give --view too"),
        ([RUN, "--fail", "-1"], "error: Invalid value for '--fail': -1 is not in the range x>=0."),
    ],
)
def test_bad_input_is_one_line(store: Store, args: list[str], message: str) -> None:
    code, out, err = replay("sample", *args, "--store", str(store.path))
    assert code == 2 and out == "" and err.count("\n") == 1
    assert fnmatch.fnmatchcase(err.rstrip("\n"), message), err
