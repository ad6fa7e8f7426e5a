"""Rubric cases end to end: `replay run --judge-url`, `replay label`, `replay judge-agreement`."""

from __future__ import annotations

import itertools
import json
import threading
from pathlib import Path

import pytest
import yaml

from examples.shop import refund_policy
from replay import Store
from replay.stub_llm import ChatRequest, Fail, JudgePolicy, Reply, StubLLM
from tests.helpers import REPO, replay

DEMO = REPO / "examples" / "shop" / "cases" / "refund-4812.yaml"
AGENT = ["--agent", "examples.shop:agent", "--tools", "examples.shop:make_tools"]


@pytest.fixture
def case(tmp_path: Path) -> str:
    data = yaml.safe_load(DEMO.read_text())
    data["fixture"] = str((DEMO.parent / data["fixture"]).resolve())
    data["rubric"] = [{"name": "tone", "criteria": "The answer says how much was refunded."}]
    path = tmp_path / "refund-judged.yaml"
    path.write_text(yaml.safe_dump(data))
    return str(path)


def run_judged(case: str, store: str, name: str, judge: object, *extra: str) -> None:
    with StubLLM(refund_policy()) as llm, StubLLM(judge) as judge_llm:  # type: ignore[arg-type]
        code, _, err = replay(
            "run", case, "--run", name, "--llm-url", llm.openai_base_url, "--store", store,
            "--judge-url", judge_llm.openai_base_url, "--judge-model", "judge-1",
            "--judge-timeout", "0.5", *AGENT, *extra,
            "--measure",  # (judged trials pass, fail or are unknown: the labels are the point)
        )  # fmt: skip
    assert code == 0, err


@pytest.mark.parametrize(
    "judge",
    [JudgePolicy(style="prose"), lambda request: Fail(500), JudgePolicy(delay=3.0)],
    ids=["prose", "http-500", "timeout"],
)
def test_a_judge_that_cannot_answer_makes_trials_unknown_out_of_pass_k_and_queued(
    case: str, tmp_path: Path, judge: object
) -> None:
    store = str(tmp_path / "results.db")
    run_judged(case, store, "r", judge, "-k", "2", "--judge-min-labels", "0")
    assert [t.verdict for t in Store(store).trials("r")] == ["unknown", "unknown"]
    _, out, _ = replay("report", "r", "--store", store, "--json")
    (row,) = json.loads(out)["cases"]
    assert (row["n"], row["verdicts"].get("unknown")) == (0, 2)  # out of the denominator
    _, out, _ = replay("judge-agreement", "r", "--store", store, "--json")
    queue = json.loads(out)["review_queue"]
    assert [q["trial"] for q in queue] == ["refund-4812#0", "refund-4812#1"]
    assert replay("label", "r", "refund-4812#1", "pass", "--store", store)[0] == 0
    _, out, _ = replay("judge-agreement", "r", "--store", store)
    assert "review queue: 1 unknown" in out and "refund-4812#0 tone" in out


def test_an_uncalibrated_judge_is_advisory_until_labels_agree(case: str, tmp_path: Path) -> None:
    store = str(tmp_path / "results.db")
    harsh = JudgePolicy(default="fail")
    run_judged(case, store, "first", harsh, "-k", "2", "--judge-min-labels", "2")
    trials = Store(store).trials("first")
    assert [t.verdict for t in trials] == ["pass", "pass"]  # the judge's fail does not count
    (grade,) = [g for t in trials for g in t.grades if g.grader == "judge:tone"][:1]
    assert grade.advisory and grade.meta["model"] == "judge-1"
    for trial in ("refund-4812#0", "refund-4812#1"):  # humans agree with the judge: fail
        replay("label", "first", trial, "fail", "--store", store)
    _, out, _ = replay("judge-agreement", "first", "--store", store, "--min-labels", "2")
    assert "tone: calibrated, its grades count" in out
    run_judged(case, store, "second", harsh, "--judge-min-labels", "2")
    assert Store(store).trials("second")[0].verdict == "fail"  # now it gates


class Sequenced:
    """A judge answering a fixed sequence of verdicts, one per call."""

    def __init__(self, verdicts: list[str]) -> None:
        self._verdicts = itertools.chain(verdicts, itertools.repeat("pass"))
        self._lock = threading.Lock()

    def __call__(self, request: ChatRequest) -> Reply:
        with self._lock:
            verdict = next(self._verdicts)
        return Reply(content=json.dumps({"verdict": verdict, "reason": "sequenced"}))


def test_judge_agreement_matches_a_hand_computation(case: str, tmp_path: Path) -> None:
    store = str(tmp_path / "results.db")
    judge = ["pass"] * 6 + ["fail"] * 4 + ["unknown", "unknown"]
    human = ["pass"] * 4 + ["fail"] * 2 + ["fail"] * 3 + ["pass"]
    run_judged(case, store, "r", Sequenced(judge), "-k", "12")
    for idx, verdict in enumerate(human):
        assert replay("label", "r", f"refund-4812#{idx}", verdict, "--store", store)[0] == 0
    # By hand: 7 of 10 agree; chance = 0.6 * 0.5 + 0.4 * 0.5 = 0.5; kappa = (0.7 - 0.5) / 0.5.
    _, out, _ = replay("judge-agreement", "r", "--store", store, "--json")
    (row,) = json.loads(out)["dimensions"]
    assert row["labels"] == 10 and row["judged"] == 12
    assert row["agreement"] == pytest.approx(0.7)
    assert row["kappa"] == pytest.approx(0.4)
    assert row["unknown_rate"] == pytest.approx(2 / 12)
    assert row["calibrated"] is False  # 10 labels < 20, and 0.7 is not above 0.8
    _, out, _ = replay("judge-agreement", "r", "--store", store)
    assert "0.700" in out and "0.400" in out and "0.167" in out


def test_label_refuses_an_unknown_trial_in_one_line(case: str, tmp_path: Path) -> None:
    store = str(tmp_path / "results.db")
    run_judged(case, store, "r", JudgePolicy())
    code, _, err = replay("label", "r", "refund-4812#7", "pass", "--store", store)
    assert code == 2 and err.count("\n") == 1 and "no trial refund-4812#7" in err
    code, _, err = replay("label", "r", "refund-4812", "pass", "--store", store)
    assert code == 2 and "CASE#INDEX" in err


def test_a_rubric_without_a_judge_is_refused_not_skipped(case: str, tmp_path: Path) -> None:
    code, _, err = replay(
        "run", case, "--run", "r", "--llm-url", "http://127.0.0.1:9/v1", "--no-llm-check",
        "--store", str(tmp_path / "r.db"), *AGENT,
    )  # fmt: skip
    assert code == 2 and "--judge-url" in err and "--no-judge" in err


def test_two_labellers_each_keep_their_label_and_their_majority_is_compared_with_the_judge(
    case: str, tmp_path: Path
) -> None:
    store = str(tmp_path / "results.db")
    run_judged(case, store, "r", Sequenced(["pass", "fail", "pass"]), "-k", "3")
    for trial, ana, ben in (
        ("#0", "pass", "pass"),
        ("#1", "fail", "pass"),
        ("#2", "pass", "unsure"),
    ):
        for who, said in (("ana", ana), ("ben", ben)):
            code, out, _ = replay("label", "r", f"refund-4812{trial}", said, "--by", who,
                                  "--note", f"{who} read it", "--store", store)  # fmt: skip
            assert code == 0 and out.strip().endswith(f"by {who}: {said}")
    assert len(Store(store).labels("r")) == 6  # nobody's label replaced another's
    # The judge (pass, fail, pass) against people's majority: #0 pass (both), #1 none (a
    # tie), #2 pass (ana's; ben was unsure): two comparisons, not five, both agreeing.
    _, out, _ = replay("judge-agreement", "r", "--store", store, "--json")
    (row,) = json.loads(out)["dimensions"]
    assert (row["labels"], row["agreement"]) == (2, 1.0)
    _, out, _ = replay("judge-agreement", "r", "--store", store)
    assert "people: 2 labellers agree on 1 of 2 trial(s) they both labelled, kappa" in out
    code, out, _ = replay("label-agreement", "r", "--store", store, "--json")
    result = json.loads(out)
    assert code == 0 and result["labellers"] == ["ana", "ben"] and result["units"] == 2
    assert [d["trial"] for d in result["disagreements"]] == ["refund-4812#1"]
    _, out, _ = replay("label-agreement", "r", "--store", store)
    assert "refund-4812#1: ana fail, ben pass" in out and "ben: ben read it" in out
    _, out, _ = replay("suite-health", "r", "--store", store)
    assert "ambiguous: refund-4812: people labelled 1 trial(s) differently (r refund-4812#1)" in out


def test_a_regrade_without_a_judge_replays_its_stored_grades(case: str, tmp_path: Path) -> None:
    store = str(tmp_path / "results.db")
    run_judged(case, store, "r", Sequenced(["fail", "pass"]), "-k", "2", "--judge-min-labels", "0")
    assert [t.verdict for t in Store(store).trials("r")] == ["fail", "pass"]
    code, out, err = replay("regrade", "r", "--store", store, "--case", case, "--json")
    result = json.loads(out)
    assert code == 0, err
    assert (result["regraded"], result["changed"], result["skipped"]) == (2, 0, [])
    with StubLLM(JudgePolicy(default="pass")) as judge:  # judged again: trial 0 now passes
        url = judge.openai_base_url
        code, out, _ = replay("regrade", "r", "--store", store, "--case", case, "--json",
                              "--judge-url", url, "--judge-model", "judge-1")  # fmt: skip
    result = json.loads(out)
    assert code == 1 and [c["trial"] for c in result["changes"]] == ["refund-4812#0"]
    assert result["changes"][0]["graders"] == {"judge:tone": ["fail", "pass"]}
    (trial,) = [t for t in Store(store).trials("r") if t.idx == 0]
    assert not trial.grades[-1].advisory  # it gated (the run's own calibration: none needed)
