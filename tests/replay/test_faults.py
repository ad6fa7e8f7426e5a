"""Seeded fault injection: each fault kind, determinism, pins, and the agents that survive."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from examples.shop import agent, make_tools, naive_refund_policy, refund_policy
from recorder import ConfigError, HttpEvent, WarningEvent, read_cassette
from replay import Store, load_case
from replay.graders import Verdict
from replay.modes import sandbox
from replay.stub_llm import StubLLM
from replay.surroundings._faults import (
    Fault,
    FaultInjector,
    InjectedFault,
    ToolHTTPError,
    ToolTimeout,
)
from tests.helpers import REPO, replay

CASES = REPO / "examples" / "shop" / "cases"
RETRIED = CASES / "refund-4812-retried.yaml"
DOWN = CASES / "refund-4812-refund-down.yaml"
AGENT = ["--agent", "examples.shop:agent", "--tools", "examples.shop:make_tools"]


class Counter:
    """A tool dispatcher that counts real executions and returns fresh results."""

    def __init__(self) -> None:
        self.runs = 0

    def __call__(self, name: str, arguments: Any) -> Any:
        self.runs += 1
        return {"run": self.runs, "name": name, "items": [1, 2, 3, 4]}


def faulty(kind: str, **extra: Any) -> tuple[Any, Counter]:
    counter = Counter()
    injector = FaultInjector([Fault(kind=kind, tool="t", **extra)], 0, "case", 0)  # type: ignore[arg-type]
    return injector.wrap(counter), counter


@pytest.mark.parametrize(
    ("kind", "error"),
    [("timeout", ToolTimeout), ("raise", InjectedFault), ("http_5xx", ToolHTTPError)],
)
def test_failing_faults_raise_and_the_tool_does_not_run(kind: str, error: type) -> None:
    call, counter = faulty(kind)
    with pytest.raises(error):
        call("t", {"a": 1})
    assert counter.runs == 0
    assert call("other", {}) == {"run": 1, "name": "other", "items": [1, 2, 3, 4]}  # not targeted


def test_duplicate_delivers_the_call_twice_and_answers_the_second() -> None:
    call, counter = faulty("duplicate")
    assert call("t", {})["run"] == 2 and counter.runs == 2


def test_truncated_malformed_and_stale_results() -> None:
    call, _ = faulty("truncated")
    assert call("t", {}) == {"run": 1}  # the first half of the keys
    call, _ = faulty("malformed_json")
    text = call("t", {})
    assert isinstance(text, str)
    with pytest.raises(json.JSONDecodeError):
        json.loads(text)
    call, counter = faulty("stale")
    assert call("t", {"a": 1})["run"] == 1  # nothing stale yet: runs
    assert call("t", {"a": 1})["run"] == 1 and counter.runs == 1  # the earlier answer, again
    assert call("t", {"a": 2})["run"] == 2  # another call is not stale


def test_draws_are_seeded_per_trial_and_bounded_by_times() -> None:
    def pattern(seed: int, index: int) -> list[bool]:
        injector = FaultInjector([Fault(kind="raise", rate=0.5)], seed, "case", index)
        call = injector.wrap(Counter())
        hits = []
        for _ in range(40):
            try:
                call("t", {})
                hits.append(False)
            except InjectedFault:
                hits.append(True)
        return hits

    assert pattern(1, 0) == pattern(1, 0)
    assert pattern(1, 0) != pattern(2, 0) and pattern(1, 0) != pattern(1, 1)
    assert 10 < sum(pattern(1, 0)) < 30
    injector = FaultInjector([Fault(kind="raise", times=2)], 0, "case", 0)
    call = injector.wrap(Counter())
    raised = 0
    for _ in range(5):
        try:
            call("t", {})
        except InjectedFault:
            raised += 1
    assert raised == 2


def test_fault_specs_parse_and_bad_ones_are_one_line_errors() -> None:
    assert Fault.parse("duplicate:issue_refund") == Fault(kind="duplicate", tool="issue_refund")
    assert str(Fault.parse("llm_429@0.25")) == "llm_429@0.25"
    for bad in ("explode", "raise@2", "raise:t@x"):
        with pytest.raises(ConfigError) as info:
            Fault.parse(bad)
        assert "\n" not in str(info.value)


@pytest.mark.parametrize(
    ("policy", "verdict"),
    [(refund_policy(), "pass"), (naive_refund_policy(), "fail")],
    ids=["demo-agent-passes", "naive-agent-refunds-twice"],
)
def test_a_refund_returned_twice_fails_the_naive_agent_on_state(
    tmp_path: Path, policy: Any, verdict: str
) -> None:
    store = str(tmp_path / "r.db")
    with StubLLM(policy) as llm:
        code, _, err = replay(
            "run", str(RETRIED), "--run", "r", "-k", "2", "--llm-url", llm.openai_base_url,
            "--store", store, *AGENT,
        )  # fmt: skip
    assert code == (0 if verdict == "pass" else 1), err
    trials = Store(store).trials("r")
    assert [t.verdict for t in trials] == [verdict, verdict]
    cassette = read_cassette(Path(trials[0].cassette))
    assert cassette.header.pins.user["faults"] == "duplicate:issue_refund"
    assert cassette.header.pins.user["fault_seed"] == "0"
    warnings = [e.message for e in cassette.events if isinstance(e, WarningEvent)]
    assert len(warnings) == 1 and warnings[0].startswith(
        "fault injected: duplicate on issue_refund"
    )
    refunds = sum(
        1 for e in cassette.events if getattr(e, "name", None) == "issue_refund"
    )  # the call was delivered twice either way
    assert refunds == 2
    if verdict == "fail":
        evidence = json.dumps([list(g.evidence) for t in trials for g in t.grades])
        assert "refunds.count(order_id=4812) == 1: expected 1, actual 2" in evidence


def test_a_failing_refund_must_not_be_reported_as_done(tmp_path: Path) -> None:
    # The demo's scripted model ignores the tool's error and carries on as if it had
    # refunded: the fault case catches the success it claims and the writes it made.
    with StubLLM(refund_policy()) as llm:
        result = sandbox(
            load_case(DOWN),
            agent,
            make_tools,
            tmp_path / "down.cassette",
            llm_base_url=llm.openai_base_url,
            faults=FaultInjector(load_case(DOWN).faults, 0, "refund-4812-refund-down", 0),
        )
    assert result.outcome.verdict is Verdict.FAIL
    evidence = "\n".join(result.outcome.evidence)
    assert 'orders[4812].status == "paid"' in evidence
    assert 'not (answer contains "refunded $")' in evidence
    assert "refunds.count(order_id=4812) == 0" not in evidence  # no refund was made


def test_llm_faults_answer_429_instead_of_the_model(tmp_path: Path) -> None:
    store = str(tmp_path / "r.db")
    case = str(CASES / "refund-4812.yaml")
    with StubLLM(refund_policy()) as llm:
        code, _, err = replay(
            "run", case, "--run", "r", "--llm-url", llm.openai_base_url, "--store", store,
            "--fault", "llm_429", *AGENT,
        )  # fmt: skip
        reached = len(llm.requests)
    assert code == 1, err  # the agent raised on the 429
    (trial,) = Store(store).trials("r")
    assert trial.verdict == "error" and reached == 0  # the demo agent does not retry
    cassette = read_cassette(Path(trial.cassette))
    (call,) = [e for e in cassette.events if isinstance(e, HttpEvent)]
    assert call.response is not None and call.response.status == 429
    assert Store(store).run("r").pins["faults"] == {"seed": 0, "run": ["llm_429"]}  # type: ignore[union-attr]


def test_review_refuses_run_faults(tmp_path: Path) -> None:
    code, _, err = replay(
        "run", str(CASES / "refund-4812.yaml"), "--run", "r", "--mode", "review",
        "--cassettes", str(REPO / "cassettes"), "--store", str(tmp_path / "r.db"),
        "--fault", "raise",
    )  # fmt: skip
    assert code == 2 and "not in review" in err


def test_offline_faults_wrap_the_frozen_tools(tmp_path: Path) -> None:
    from replay.modes import offline

    golden = read_cassette(REPO / "cassettes" / "refund-4812.cassette")
    case = load_case(CASES / "refund-4812.yaml")

    def run(fault: str, url: str) -> Any:
        injector = FaultInjector([Fault.parse(fault)], 0, case.id, 0)
        return offline(
            case, agent, make_tools, golden, tmp_path / f"{fault}.cassette",
            llm_base_url=url, llm="live", faults=injector,
        )  # fmt: skip

    with StubLLM(refund_policy()) as llm:  # a live model: a frozen one cannot hear the error
        failed = run("raise:issue_refund", llm.openai_base_url)
        # A second delivery the recording never saw cannot be answered offline: no guess.
        twice = run("duplicate:issue_refund", llm.openai_base_url)
    assert failed.outcome.verdict is Verdict.FAIL
    expected = "refunds.count(order_id=4812) == 1: expected 1, actual 0"
    assert any(expected in e for e in failed.outcome.evidence)
    assert twice.outcome.verdict is Verdict.UNSUPPORTED
    assert "issue_refund" in twice.trial.unsupported[0]
