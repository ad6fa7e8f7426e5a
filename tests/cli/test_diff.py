"""`replay diff`: two cassettes (first divergence, rows, answers) and two runs (per case)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from examples.shop import agent, make_tools, refund_policy
from replay import load_case, sandbox
from replay.stub_llm import Reply, ScriptedPolicy, StubLLM, ToolCall
from tests.helpers import REPO, replay

CASE_PATH = REPO / "examples" / "shop" / "cases" / "refund-4812.yaml"
CASE = load_case(CASE_PATH)
AGENT = ["--agent", "examples.shop:agent", "--tools", "examples.shop:make_tools"]


def trial(path: Path, policy: ScriptedPolicy) -> Path:
    with StubLLM(policy) as llm:
        sandbox(CASE, agent, make_tools, path, llm_base_url=llm.openai_base_url)
    return path


def test_two_cassettes_name_the_step_tool_argument_and_row(tmp_path: Path) -> None:
    turns = list(refund_policy().turns)
    refund = turns[1].tool_calls[0]
    turns[1] = Reply(tool_calls=(ToolCall(refund.name, {**refund.arguments, "amount": 30.0}),))
    a = trial(tmp_path / "a.cassette", refund_policy())
    b = trial(tmp_path / "b.cassette", ScriptedPolicy(turns, final=refund_policy().final))
    code, out, _ = replay("diff", str(a), str(b))
    assert code == 0
    # The agent's second call, which `replay show` calls step 4 (after LLM, tool, LLM).
    assert (
        "first divergence step 4: both called issue_refund, with different arguments: "
        "['amount']: 35.0 -> 30.0"
    ) in out
    assert "refunds[1] inserted differently: ['amount']: 35.0 -> 30.0" in out
    _, shown, _ = replay("show", str(a))
    assert "\n4. tool issue_refund(order_id=4812, amount=35.0" in shown
    code, out, _ = replay("diff", str(a), str(b), "--json")
    data = json.loads(out)["divergence"]
    assert (data["call"], data["step_a"], data["step_b"]) == (2, 4, 4)
    assert data["a"] == "issue_refund"
    code, out, _ = replay("diff", str(a), str(a))
    assert out.strip() == "same decisions, same world changes, same answer"


def test_a_trial_that_stops_early(tmp_path: Path) -> None:
    a = trial(tmp_path / "a.cassette", refund_policy())
    b = trial(tmp_path / "b.cassette", ScriptedPolicy(refund_policy().turns[:2], final="Refunded."))
    _, out, _ = replay("diff", str(a), str(b))
    assert "step 6 in A: B stopped; the other went on with update_order_status(" in out
    assert "orders[4812] updated by A only" in out
    assert "answer B: Refunded." in out


def test_each_trial_is_named_by_its_own_step_numbers(tmp_path: Path) -> None:
    turns = list(refund_policy().turns)
    lookup = turns[0].tool_calls[0]
    turns[0] = Reply(tool_calls=(lookup, lookup))  # B looks the order up twice in one turn
    a = trial(tmp_path / "a.cassette", refund_policy())
    b = trial(tmp_path / "b.cassette", ScriptedPolicy(turns, final=refund_policy().final))
    _, out, _ = replay("diff", str(a), str(b))
    assert "first divergence step 4 in A, 3 in B: A called issue_refund(" in out
    assert ", B called lookup_order(order_id=4812)" in out
    _, shown, _ = replay("show", str(b))
    assert "\n3. tool lookup_order(order_id=4812)" in shown


def test_two_runs_side_by_side(tmp_path: Path) -> None:
    store = str(tmp_path / "r.db")
    case = str(CASE_PATH)
    with StubLLM(refund_policy()) as llm:
        replay(
            "run",
            case,
            "--run",
            "stable",
            "-k",
            "8",
            "--llm-url",
            llm.openai_base_url,
            "--store",
            store,
            *AGENT,
        )
    with StubLLM(refund_policy(), seed=1, flake_rate=0.5) as llm:
        replay(
            "run",
            case,
            "--run",
            "flaky",
            "-k",
            "8",
            "--llm-url",
            llm.openai_base_url,
            "--store",
            store,
            *AGENT,
        )
    code, out, _ = replay("diff", "stable", "flaky", "--store", store, "--json")
    compared = json.loads(out)
    (change,) = compared["cases"]
    assert change["a"]["pass1"] == 1.0 and change["b"]["pass1"] < 1.0
    assert change["newly_failing"] and change["failing_cassette"].endswith(".cassette")
    assert change["p_value"] is not None and change["pass_k"][0] == 8
    assert change["q_value"] == change["p_value"]  # one case tested: nothing to adjust
    # One case: the suite figures are that case's own two samples of trials.
    pass1, pass8 = compared["suite"]
    assert (pass1["figure"], pass1["cases"], pass1["a"]) == ("pass^1", 1, 1.0)
    assert pass1["interval"][0] <= pass1["change"] <= pass1["interval"][1]
    assert pass8["k"] == 8 and compared["only_a"] == compared["only_b"] == []
    code, out, _ = replay("diff", "stable", "flaky", "--store", store)
    assert "newly failing: refund-4812  read: replay show " in out
    code, _, err = replay("diff", "stable", "nope", "--store", store)
    assert code == 2 and "no run 'nope'" in err


def test_off_a_terminal_ids_are_never_cut(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("COLUMNS", raising=False)
    long_id = "reserve-widgets-for-alice-before-the-spring-sale-" + "x" * 40
    folder = tmp_path / "cases"
    folder.mkdir()
    (folder / "fixture.sql").write_text((REPO / "examples" / "shop" / "fixture.sql").read_text())
    text = CASE_PATH.read_text().replace("../fixture.sql", "fixture.sql")
    case = folder / "long.yaml"
    case.write_text(text.replace(f"id: {CASE.id}", f"id: {long_id}"))
    store = str(tmp_path / "r.db")
    for name in ("a", "b"):
        with StubLLM(refund_policy()) as llm:
            url = ["--llm-url", llm.openai_base_url, "--isolation", "none"]
            code, _, err = replay("run", str(case), "--run", name, "--store", store, *AGENT, *url)
            assert code == 0, err
    for args in (["report", "a"], ["diff", "a", "b"]):
        code, out, err = replay(*args, "--store", store)
        assert code == 0, err
        assert long_id in out and "…" not in out, out
