"""The judge-check library: pairwise judging, self-preference, restating models, the store."""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path

import pytest

from examples.shop import naive_refund_policy, record_refund, refund_policy
from recorder import ConfigError, HttpEvent, read_cassette
from replay import Store, judge_check, load_case, review
from replay.graders import Dimension, Judge, Trial
from replay.graders import Restater as Restater  # (not public: what the CLI builds)
from replay.stub_llm import ChatRequest, Fail, Reply, StubLLM
from tests.cli.test_judge_check import FAIR, case, judged, label, run
from tests.helpers import REPO

__all__ = ["case"]  # the fixture, shared with the CLI tests

DIMENSION = Dimension("care", "The refund is issued once, safely.")


@pytest.fixture
def trial(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Trial:
    monkeypatch.chdir(REPO)
    cassette = tmp_path / "refund.cassette"
    record_refund(cassette)
    demo = load_case(REPO / "examples" / "shop" / "cases" / "refund-4812.yaml")
    return review(demo, cassette).trial


@pytest.mark.parametrize(
    ("content", "choice"),
    [
        ('{"choice": "B", "reason": "safer"}', "B"),
        ('```json\n{"choice": "a", "reason": "safer"}\n```', "A"),
        ("Candidate A, clearly.", None),
        ('{"choice": "both", "reason": "tie"}', None),
    ],
    ids=["json", "fenced-lowercase", "prose", "neither"],
)
def test_compare_asks_the_pairwise_prompt_and_records_the_call(
    trial: Trial, tmp_path: Path, content: str, choice: str | None
) -> None:
    seen: list[ChatRequest] = []

    def policy(request: ChatRequest) -> Reply:
        seen.append(request)
        return Reply(content=content)

    cassette = tmp_path / "pair.judge.cassette"
    with StubLLM(policy) as llm:
        said, _ = Judge(llm.openai_base_url, "judge-1").compare(trial, trial, DIMENSION, cassette)
    assert said == choice
    (request,) = seen
    assert "candidate A and candidate B" in request.messages[0]["content"]
    assert request.messages[1]["content"].count("Final answer to the user:") == 2
    events = read_cassette(cassette).events
    assert [type(e) for e in events] == [HttpEvent]


def test_compare_is_unknown_when_the_judge_fails(trial: Trial, tmp_path: Path) -> None:
    with StubLLM(lambda request: Fail(503)) as llm:
        said, why = Judge(llm.openai_base_url, "judge-1").compare(
            trial, trial, DIMENSION, tmp_path / "pair.judge.cassette"
        )
    assert (said, why) == (None, "judge answered HTTP 503")


def test_self_preference_is_measured_across_two_agent_families(case: str, tmp_path: Path) -> None:
    store = str(tmp_path / "results.db")
    run(case, store, "gpt", refund_policy(), FAIR, "-k", "2", "--model", "gpt-4o")
    run(case, store, "claude", naive_refund_policy(), FAIR, "-k", "2", "--model", "claude-3")
    label(store, "gpt", "pass", 2)
    label(store, "claude", "pass", 2)  # people pass both; the judge fails the naive agent
    with StubLLM(FAIR) as llm:  # type: ignore[arg-type]
        result = judge_check(Store(store), ["gpt", "claude"], Judge(llm.openai_base_url, "gpt-4.1"))
    probe = next(p for p in result.probes if p.name == "self-preference")
    assert (probe.status, probe.rate, probe.n) == ("measured", 1.0, 4)
    assert "+0.00 on gpt agents, -1.00 on the others" in probe.note
    assert result.reason == "advisory: judge-check found self-preference pass-rate gap 1.00 > 0.1"
    position = next(p for p in result.probes if p.name == "position")
    assert (position.n, position.rate) == (2, 0.0)  # pairs span the runs; FAIR ignores order
    assert (result.tpr, result.tnr, result.kappa) == (0.5, None, 0.0)


def agents_phrasing(text: str) -> str:
    return "pass" if "Final answer to the user:\nI refunded" in text else "fail"


def test_a_restating_model_finds_a_judge_that_wants_the_agents_own_words(
    case: str, tmp_path: Path
) -> None:
    store = str(tmp_path / "results.db")
    run(case, store, "r", refund_policy(), FAIR, "-k", "2")
    label(store, "r", "pass", 2)
    asked: list[str] = []

    def restating(request: ChatRequest) -> Reply:
        asked.append(request.messages[-1]["content"])
        return Reply(content="Mia Li was refunded $35.00 for order 4812 and told by email.")

    picky = judged(agents_phrasing, lambda a, b: "unknown")
    with StubLLM(picky) as judge, StubLLM(restating) as restater:  # type: ignore[arg-type]
        result = judge_check(
            Store(store),
            ["r"],
            Judge(judge.openai_base_url, "judge-1"),
            restate=Restater(restater.openai_base_url, "restate-1"),
        )
    style = next(p for p in result.probes if p.name == "style")
    assert (style.n, style.flips, style.rate) == (2, 2, 1.0)
    assert asked == ["I refunded $35.00 for order 4812 and emailed Mia Li to let her know."] * 2
    assert not result.passed and "style flip rate 1.00" in result.reason


def test_a_failing_restating_model_is_a_config_error(case: str, tmp_path: Path) -> None:
    store = str(tmp_path / "results.db")
    run(case, store, "r", refund_policy(), FAIR)
    label(store, "r", "pass", 1)
    with StubLLM(FAIR) as judge, StubLLM(lambda r: Fail(500)) as restater:  # type: ignore[arg-type]
        with pytest.raises(ConfigError, match=r"restating model 'm' .* answered HTTP 500"):
            judge_check(
                Store(store),
                ["r"],
                Judge(judge.openai_base_url, "judge-1"),
                restate=Restater(restater.openai_base_url, "m"),
            )


def test_the_same_seed_gives_the_same_check(case: str, tmp_path: Path) -> None:
    store = str(tmp_path / "results.db")
    run(case, store, "r", refund_policy(), FAIR, "-k", "2")
    label(store, "r", "pass", 2)
    with StubLLM(FAIR) as llm:  # type: ignore[arg-type]
        judge = Judge(llm.openai_base_url, "judge-1")
        first, again = (judge_check(Store(store), ["r"], judge, seed=7) for _ in range(2))
    assert first.to_json() == again.to_json()
    assert json.loads(json.dumps(first.to_json()))["probes"][1]["name"] == "length"
    cassettes = sorted(p.name for p in Path(first.cassettes).iterdir())
    assert "r-refund-4812-0.length.judge.cassette" in cassettes


def test_a_store_gains_the_judge_checks_table_when_upgraded(tmp_path: Path) -> None:
    path = tmp_path / "results.db"
    Store(path).add_judge_check("m", ["h"], passed=False, reason="why", runs=["r"], result={})
    (stored,) = Store(path).judge_checks().values()
    assert (stored.model, stored.rubric_hash, stored.reason) == ("m", "h", "why")
    assert not stored.passed and stored.runs == ("r",)
    with sqlite3.connect(path) as conn:
        conn.execute("DROP TABLE judge_checks")
        conn.execute("PRAGMA user_version = 4")
    conn.close()
    assert Store(path).judge_checks() == {}
    with sqlite3.connect(path) as conn:
        tables = {name for (name,) in conn.execute("SELECT name FROM sqlite_master")}
    conn.close()
    assert "judge_checks" in tables


def test_a_trial_that_cannot_be_rebuilt_is_skipped_and_said(case: str, tmp_path: Path) -> None:
    store = str(tmp_path / "results.db")
    run(case, store, "r", refund_policy(), FAIR, "-k", "2")
    label(store, "r", "pass", 2)
    gone = Store(store).trials("r")[1].cassette
    assert gone is not None
    Path(gone).unlink()
    with StubLLM(FAIR) as llm:  # type: ignore[arg-type]
        result = judge_check(Store(store), ["r"], Judge(llm.openai_base_url, "judge-1"))
    assert result.trials == 1
    assert result.skipped == (f"r:refund-4812#1: its cassette {gone} is not there",)
