"""Tool-use metrics: selection apart from arguments, abstention, loops, percentiles."""

from __future__ import annotations

from pathlib import Path

from examples.shop import refund_policy
from replay import AgentSettings, LlmSettings, RunSpec, Store, build_report, execute
from replay.results._tooluse import percentile
from replay.stub_llm import Reply, ScriptedPolicy, StubLLM, ToolCall
from tests.helpers import REPO

CASE = REPO / "examples" / "shop" / "cases" / "refund-4812.yaml"


def run(store: Store, name: str, policy: ScriptedPolicy, cases: list[str], k: int = 2) -> None:
    with StubLLM(policy) as llm:
        execute(
            RunSpec(
                name=name,
                cases=cases,
                mode="sandbox",
                trials=k,
                agent=AgentSettings("examples.shop:agent", "examples.shop:make_tools"),
                llm=LlmSettings(url=llm.openai_base_url),
            ),
            store,
        )


def test_selection_and_arguments_fail_apart(tmp_path: Path) -> None:
    store = Store(tmp_path / "r.db")
    run(store, "right", refund_policy(), [str(CASE)])
    turns = list(refund_policy().turns)
    refund = turns[1].tool_calls[0]
    turns[1] = Reply(tool_calls=(ToolCall(refund.name, {**refund.arguments, "amount": 30.0}),))
    run(store, "wrong-amount", ScriptedPolicy(turns, final="done"), [str(CASE)])
    right = build_report(store, "right").tool_use
    wrong = build_report(store, "wrong-amount").tool_use
    assert (right.selection, right.arguments, right.loops) == (1.0, 1.0, 0)
    assert wrong.selection == 1.0 and wrong.arguments == 0.8  # 4 of 5 calls had the right args
    steps_p50, steps_p95 = right.percentiles["steps"]
    assert steps_p50 == steps_p95 == 6.0
    assert right.percentiles["latency"][0] is not None and right.percentiles["cost"] == (None, None)


def test_abstention_and_loops(tmp_path: Path) -> None:
    abstain = tmp_path / "abstain.yaml"
    abstain.write_text(
        CASE.read_text()
        .replace("id: refund-4812", "id: no-tool-fits")
        .replace("../fixture.sql", str(CASE.parent.parent / "fixture.sql"))
        .replace("tags: [refunds, critical]", "tags: [abstain]")
    )
    store = Store(tmp_path / "r.db")
    run(store, "asks", ScriptedPolicy([], final="Which order do you mean?"), [str(abstain)])
    assert build_report(store, "asks").tool_use.abstention == 1.0
    lookup = Reply(tool_calls=(ToolCall("lookup_order", {"order_id": 4812}),))
    run(store, "loops", ScriptedPolicy([lookup] * 12, final="stuck"), [str(CASE)])
    report = build_report(store, "loops")
    assert report.tool_use.loops == 2 and report.tool_use.selection is not None


def test_percentile_is_nearest_rank() -> None:
    assert percentile([], 50) is None
    assert percentile([3.0, 1.0, 2.0], 50) == 2.0
    assert percentile([float(i) for i in range(1, 101)], 95) == 95.0
