"""`replay regrade` and `replay golden`: a grader change that moves verdicts is caught."""

from __future__ import annotations

import json
import sqlite3
import sys
from collections.abc import Iterator
from contextlib import closing
from pathlib import Path

import pytest

from examples.shop import refund_policy
from replay import Store, regrade
from replay.graders import REGISTRY, Verdict
from replay.stub_llm import StubLLM
from tests.helpers import REPO, replay

CASE = str(REPO / "examples" / "shop" / "cases" / "refund-4812.yaml")
AGENT = ["--agent", "examples.shop:agent", "--tools", "examples.shop:make_tools"]
TRIALS = 100

pytestmark = pytest.mark.xdist_group("regrade")  # one worker records the 100 trials, once

GRADER = '''
from replay.graders import Grade, Verdict, grader


@grader("policy")
def policy(trial):
    """{doc}"""
    index = trial.cassette.header.trial
    {body}
'''
PASS_ALL = "return Grade('policy', Verdict.PASS)"
STRICTER = (  # the change: a stricter rule now fails trials 17 and 42
    "return Grade('policy', Verdict.FAIL if index in (17, 42) else Verdict.PASS, ('strict',))"
)
REFACTORED = "return Grade('policy', Verdict.PASS, ('every trial is within the policy',))"


def write_grader(folder: Path, body: str, doc: str = "The refund policy.") -> None:
    """A new version of the grader module, as the next process to import it sees it."""
    (folder / "policy_grader.py").write_text(GRADER.format(body=body, doc=doc))
    sys.modules.pop("policy_grader", None)
    REGISTRY.unregister("policy")


@pytest.fixture(scope="session")
def recorded(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    """A store with a run of 100 trials graded by policy_grader:policy (each passes), labelled;
    and the folder of the grader module (on sys.path only while a test or this runs)."""
    folder = tmp_path_factory.mktemp("regrade")
    store = folder / "results.db"
    with pytest.MonkeyPatch.context() as patch:
        patch.syspath_prepend(str(folder))
        patch.setattr(sys, "dont_write_bytecode", True)
        write_grader(folder, PASS_ALL)
        with StubLLM(refund_policy()) as llm:
            code, _, err = replay(
                "run", CASE, "--run", "base", "--llm-url", llm.openai_base_url,
                "--store", str(store), "--isolation", "none",
                "--grader", "policy_grader:policy", "-k", str(TRIALS), *AGENT,
            )  # fmt: skip
        assert code == 0, err
        write_grader(folder, PASS_ALL)  # (forgotten: the next import is a test's)
    labels = Store(store)
    for idx in range(TRIALS):  # people agree with the stricter rule on trial 17 only
        said = "fail" if idx == 17 else "pass"
        labels.add_label("base", "refund-4812", idx, said, labeller="ana")
    return store, folder


@pytest.fixture
def graded_run(
    recorded: tuple[Path, Path], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> Iterator[str]:
    """A copy of the recorded store; the grader as it was when the run was graded."""
    store, folder = recorded
    monkeypatch.syspath_prepend(str(folder))
    monkeypatch.setattr(sys, "dont_write_bytecode", True)
    copy = tmp_path / "results.db"
    with closing(sqlite3.connect(store)) as source, closing(sqlite3.connect(copy)) as target:
        source.backup(target)  # (the store is in WAL mode: a file copy may miss the last rows)
    yield str(copy)
    write_grader(folder, PASS_ALL)


@pytest.mark.slow
def test_a_grader_change_that_flips_2_of_100_exits_1_and_names_them(
    graded_run: str, recorded: tuple[Path, Path]
) -> None:
    write_grader(recorded[1], STRICTER)
    code, out, err = replay("regrade", "base", "--store", graded_run, "--json")
    assert code == 1, err
    result = json.loads(out)
    assert (result["regraded"], result["changed"], result["drift"]) == (100, 2, 0.02)
    assert [c["trial"] for c in result["changes"]] == ["refund-4812#17", "refund-4812#42"]
    assert result["changes"][0]["graders"] == {"policy": ["pass", "fail"]}
    assert [c["label"] for c in result["changes"]] == ["fail", "pass"]
    policy = next(g for g in result["graders"] if g["grader"] == "policy")
    # before: passed all 100, people passed 99; after: passed 98, all of which people passed
    assert (policy["precision_before"], policy["recall_before"]) == (0.99, 1.0)
    assert (policy["precision"], policy["recall"]) == (1.0, pytest.approx(98 / 99))
    assert result["cases"] == {"refund-4812": {"changed": 2, "trials": 100}}
    _, text, _ = replay("regrade", "base", "--store", graded_run)
    assert "refund-4812#17 pass -> fail (policy pass -> fail); people said fail" in text
    assert "DRIFT: 2 of 100 verdicts changed (2.0% > 1.0%)" in text
    assert replay("regrade", "base", "--store", graded_run, "--max-drift", "0.02")[0] == 0


def test_a_refactor_that_changes_no_verdict_exits_0(
    graded_run: str, recorded: tuple[Path, Path]
) -> None:
    write_grader(recorded[1], REFACTORED, doc="Rewritten: the same rule.")
    code, out, err = replay("regrade", "base", "--store", graded_run)
    assert code == 0, err
    assert "100 trial(s), 0 verdict(s) changed" in out and "within the drift allowed" in out
    assert Store(graded_run).trials("base")[0].grades[-1].evidence == ()  # the store untouched


def test_store_as_keeps_the_regraded_run_beside_the_original(
    graded_run: str, recorded: tuple[Path, Path]
) -> None:
    write_grader(recorded[1], STRICTER)
    code, _, _ = replay("regrade", "base", "--store", graded_run, "--store-as", "strict")
    assert code == 1  # (stored all the same)
    store = Store(graded_run)
    failed = [t.idx for t in store.trials("strict") if t.verdict is Verdict.FAIL]
    assert failed == [17, 42] and all(t.passed for t in store.trials("base"))
    run = store.run("strict")
    assert run is not None and run.pins["regraded_from"] == "base"
    code, _, err = replay("regrade", "base", "--store", graded_run, "--store-as", "strict")
    assert code == 2 and "run 'strict' exists" in err


def test_golden_runs_are_regraded_against_their_labels(
    graded_run: str, recorded: tuple[Path, Path]
) -> None:
    code, out, err = replay("regrade", "--golden", "--store", graded_run)
    assert code == 2 and "no golden run" in err
    assert replay("golden", "base", "--store", graded_run)[1].strip() == (
        "run base is golden: 100 labelled trial(s)"
    )
    write_grader(recorded[1], STRICTER)
    code, out, _ = replay("regrade", "--golden", "--store", graded_run, "--json")
    (result,) = json.loads(out)
    assert code == 1 and result["labels_only"] and result["changed"] == 2
    store = Store(graded_run)
    # Within a looser drift: one trial moved towards the labels (17), one away (42).
    toward_and_away = regrade(store, "base", labels_only=True, max_drift=0.05)
    assert toward_and_away.passed and not toward_and_away.fewer_agree
    write_grader(recorded[1], STRICTER.replace("(17, 42)", "(42,)"))  # away from them only
    away = regrade(store, "base", labels_only=True, max_drift=0.05)
    assert not away.drifted and away.fewer_agree and not away.passed
    code, out, _ = replay("regrade", "base", "--against-labels", "--max-drift", "0.05",
                          "--store", graded_run)  # fmt: skip
    assert code == 1 and "agree with the labels on fewer trials" in out
    assert replay("golden", "base", "--unset", "--store", graded_run)[0] == 0
    assert store.golden_runs() == []


def test_a_run_without_labels_cannot_be_golden(graded_run: str) -> None:
    store = Store(graded_run)
    store.start_run("unlabelled", {}, {})
    code, _, err = replay("golden", "unlabelled", "--store", graded_run)
    assert code == 2 and "has no trial labelled pass or fail" in err
    code, _, err = replay("regrade", "nope", "--store", graded_run)
    assert code == 2 and err.count("\n") == 1 and "no run 'nope'" in err


def test_trials_whose_cassettes_are_gone_or_damaged_are_skipped_and_named(tmp_path: Path) -> None:
    store = str(tmp_path / "results.db")
    with StubLLM(refund_policy()) as llm:
        code, _, err = replay(
            "run", CASE, "--run", "r", "--llm-url", llm.openai_base_url, "--store", store,
            "--isolation", "none", "-k", "4", *AGENT,
        )  # fmt: skip
    assert code == 0, err
    paths = [Path(str(t.cassette)) for t in Store(store).trials("r")]
    paths[0].unlink()
    paths[1].write_bytes(b"not a cassette")
    paths[2].write_bytes(paths[2].read_bytes()[:-200])  # the footer and more cut off
    code, out, err = replay("regrade", "r", "--store", store, "--json")
    result = json.loads(out)
    assert code == 3, err  # nothing regraded moved, but three trials could not be regraded
    assert result["regraded"] == 1 and result["changed"] == 0 and not result["complete"]
    why = {s["trial"]: s["why"] for s in result["skipped"]}
    assert "is not there" in why["refund-4812#0"]
    assert "not a cassette" in why["refund-4812#1"]
    assert "cut short" in why["refund-4812#2"]
    _, out, _ = replay("regrade", "r", "--store", store)
    assert "INCOMPLETE: 3 trial(s) skipped could not be graded again" in out
    paths[3].unlink()  # nothing left to regrade: never a pass
    code, out, _ = replay("regrade", "r", "--store", store, "--store-as", "kept")
    assert code == 3 and "0 trial(s), 0 verdict(s) changed" in out
    assert len(Store(store).trials("kept")) == 4  # what was not regraded is kept as it was


def test_a_misspelled_grader_is_bad_input_not_a_skipped_trial(graded_run: str) -> None:
    code, out, err = replay("regrade", "base", "--store", graded_run, "--grader", "nomod:fn")
    assert code == 2 and out == "" and err.count("\n") == 1 and "nomod" in err
