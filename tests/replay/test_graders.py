"""Graders on real trials: the demo agent in a fresh world, recorded, graded."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from examples.shop import INSTRUCTION, make_tools, naive_refund_policy, refund_policy, run_agent
from recorder import ConfigError, Tool, read_cassette, record, tool
from replay import Fixture, StateDiff, load_case
from replay.graders import (
    REGISTRY,
    Assertion,
    Grade,
    GradedCase,
    SqliteWorld,
    Trial,
    Verdict,
    combine,
    grader,
    run_graders,
)
from replay.stub_llm import Reply, ScriptedPolicy, StubLLM, ToolCall
from tests.helpers import REPO

CASE = load_case(REPO / "examples" / "shop" / "cases" / "refund-4812.yaml")


def sandbox_trial(
    tmp_path: Path, policy: ScriptedPolicy, extra: list[Tool[..., Any]] = ()
) -> Trial:  # type: ignore[assignment]
    """Run the demo agent once in a fresh world of the case's fixture, recorded, and grade-ready."""
    world = Fixture.load(CASE.fixture).open()
    path = tmp_path / "trial.cassette"
    tools = [*make_tools(world.conn), *extra]
    with StubLLM(policy) as llm, record(path, world=world.conn, case_id=CASE.id) as rec:
        rec.answer(run_agent(INSTRUCTION, tools, base_url=llm.openai_base_url))
    cassette = read_cassette(path)
    assert cassette.footer is not None and cassette.footer.state_diff is not None
    return Trial(
        case=CASE,
        cassette=cassette,
        diff=StateDiff.from_delta(cassette.footer.state_diff),
        world=SqliteWorld(world.conn),
        answer=cassette.footer.final_answer,
    )


def turns_with(*extra: Reply, at: int) -> ScriptedPolicy:
    turns = list(refund_policy().turns)
    turns[at:at] = extra
    return ScriptedPolicy(turns, final=refund_policy().final)


def test_the_demo_trial_passes_every_grader(tmp_path: Path) -> None:
    trial = sandbox_trial(tmp_path, refund_policy())
    grades = run_graders(trial, ["rule", "state", "replay"])
    assert [(g.grader, g.verdict) for g in grades] == [
        ("rule", Verdict.PASS),
        ("state", Verdict.PASS),
    ]
    assert combine(grades).verdict is Verdict.PASS


def test_a_duplicate_refund_fails_with_expected_and_actual(tmp_path: Path) -> None:
    again = naive_refund_policy().turns[1]  # issue_refund once more, with no idempotency key
    trial = sandbox_trial(tmp_path, turns_with(again, at=2))
    (state,) = run_graders(trial, ["state"])
    assert state.verdict is Verdict.FAIL
    assert "failed: refunds.count(order_id=4812) == 1: expected 1, actual 2" in state.evidence
    assert state.score is not None and 0 < state.score < 1
    assert combine([state]).verdict is Verdict.FAIL


def test_writing_an_unrelated_table_fails_no_side_effects_naming_it(tmp_path: Path) -> None:
    world_conn: list[Any] = []

    def restock_tool(conn: Any) -> Tool[..., Any]:
        @tool(writes=True)
        def restock(sku: str, stock: int) -> str:
            """Set the stock of a product."""
            conn.execute("update inventory set stock = ? where sku = ?", (stock, sku))
            return "ok"

        return restock

    world = Fixture.load(CASE.fixture).open()
    world_conn.append(world.conn)
    policy = turns_with(
        Reply(tool_calls=(ToolCall("restock", {"sku": "MUG-01", "stock": 0}),)), at=1
    )
    path = tmp_path / "t.cassette"
    tools = [*make_tools(world.conn), restock_tool(world.conn)]
    with StubLLM(policy) as llm, record(path, world=world.conn) as rec:
        rec.answer(run_agent(INSTRUCTION, tools, base_url=llm.openai_base_url))
    cassette = read_cassette(path)
    assert cassette.footer is not None and cassette.footer.state_diff is not None
    trial = Trial(
        CASE,
        cassette,
        StateDiff.from_delta(cassette.footer.state_diff),
        SqliteWorld(world.conn),
        cassette.footer.final_answer,
    )
    (state,) = run_graders(trial, ["state"])
    assert state.verdict is Verdict.FAIL and state.veto
    assert any(
        "changed inventory (allowed: emails, ledger, orders, refunds)" in e for e in state.evidence
    )
    # A veto fails the trial even when the weighted score would pass it.
    assert state.score is not None and state.score >= 0.8
    assert combine([state], "weighted").verdict is Verdict.FAIL


def test_rule_grader_loops_forbidden_must_call_and_budget(tmp_path: Path) -> None:
    lookup = Reply(tool_calls=(ToolCall("lookup_order", {"order_id": 4812}),))
    trial = sandbox_trial(tmp_path, ScriptedPolicy([lookup] * 13, final="stuck"))
    strict = CASE.model_copy(update={"forbidden_tools": ["lookup_order"], "max_steps": 5})
    (grade,) = run_graders(
        Trial(strict, trial.cassette, trial.diff, trial.world, trial.answer), ["rule"]
    )
    assert grade.verdict is Verdict.FAIL and grade.veto
    assert grade.evidence == (
        "loop: lookup_order(order_id=4812) called 12 times",
        "forbidden tool lookup_order was called",
        "issue_refund was never called (must_call)",
        "12 steps, over the budget of 5",  # the agent stops itself at 12
    )


@dataclass(frozen=True)
class _OwnCase:
    """A case that is not a case file: what ``GradedCase`` names, and nothing else."""

    id: str = "own"
    instruction: str = "refund order 4812"
    tags: tuple[str, ...] = ()
    allowed_tables: tuple[str, ...] | None = None
    forbidden_tools: tuple[str, ...] = ("lookup_order",)
    must_call: tuple[str, ...] = ()
    max_steps: int | None = None
    max_cost: float | None = None
    reference_solution: tuple[Any, ...] = ()
    match_reference: None = None
    rubric: tuple[Any, ...] = ()

    def parsed_assertions(self) -> list[Assertion]:
        return [Assertion("answer contains 'refund'")]


def test_graders_read_any_case_shaped_as_graded_case(tmp_path: Path) -> None:
    own: GradedCase = _OwnCase()
    trial = sandbox_trial(tmp_path, refund_policy())
    rule, state = run_graders(
        Trial(own, trial.cassette, trial.diff, trial.world, trial.answer), ["rule", "state"]
    )
    assert rule.verdict is Verdict.FAIL
    assert rule.evidence == ("forbidden tool lookup_order was called",)
    assert state.verdict is Verdict.PASS


def test_a_grader_that_raises_is_an_error_grade_and_the_run_goes_on(tmp_path: Path) -> None:
    @grader("broken-for-test")
    def broken(trial: Trial) -> Grade:
        raise RuntimeError("boom")

    try:
        trial = sandbox_trial(tmp_path, refund_policy())
        grades = run_graders(trial, ["broken-for-test", "state"])
        assert [g.verdict for g in grades] == [Verdict.ERROR, Verdict.PASS]
        assert grades[0].evidence[0].startswith("RuntimeError: boom (")
        assert combine(grades).verdict is Verdict.ERROR
        grader("broken-for-test")(broken)  # the same function again: nothing happens
        with pytest.raises(ConfigError, match="already registered"):
            grader("broken-for-test")(lambda trial: [])
    finally:
        REGISTRY.unregister("broken-for-test")


@pytest.mark.parametrize(
    ("grades", "scoring", "verdict"),
    [
        ([("a", "pass", None), ("b", "fail", 0.9)], "all_pass", "fail"),
        ([("a", "pass", None), ("b", "fail", 0.9)], "weighted", "pass"),
        ([("rule", "fail", None), ("state", "pass", None)], "hybrid", "fail"),
        ([("rule", "pass", None), ("state", "fail", 0.85)], "hybrid", "pass"),
        ([("a", "pass", None), ("b", "unknown", None)], "all_pass", "unknown"),
        ([("a", "fail", None), ("b", "unknown", None)], "all_pass", "fail"),
        ([("a", "pass", None), ("b", "unsupported", None)], "weighted", "unsupported"),
    ],
)
def test_combining_grades(
    grades: list[tuple[str, str, float | None]], scoring: str, verdict: str
) -> None:
    built = [Grade(name, Verdict.parse(v), score=score) for name, v, score in grades]
    assert combine(built, scoring).verdict is Verdict.parse(verdict)


def test_verdicts_parse_with_a_helpful_message() -> None:
    with pytest.raises(
        ValueError, match="unknown verdict 'passed'; use one of pass, fail, unknown"
    ):
        Verdict.parse("passed")
