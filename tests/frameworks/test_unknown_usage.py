"""A stream that reports no token usage: unknown in show, report and viewer; budgets unchecked."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from replay import Store
from replay.stub_llm import StubLLM
from tests.helpers import REPO, replay

EXAMPLES = REPO / "examples" / "frameworks"


def test_unknown_usage_is_unknown_and_a_cost_budget_is_not_checked(tmp_path: Path) -> None:
    pytest.importorskip("agents", reason="the frameworks extra is not installed")
    from examples.frameworks import reserve_policy

    case = tmp_path / "reserve.yaml"
    text = (EXAMPLES / "cases" / "reserve.yaml").read_text()
    text = text.replace("fixture: ../world.sql", f"fixture: {EXAMPLES / 'world.sql'}")
    case.write_text(text + "max_cost: 0.01\n")
    store = str(tmp_path / "results.db")
    with StubLLM(reserve_policy()) as llm:
        code, _, err = replay(
            "run", str(case), "--run", "streamed", "-k", "2", "--store", store,
            "--agent", "examples.frameworks.openai_agents_chat:agent",
            "--tools", "examples.frameworks:make_tools", "--llm-url", llm.openai_base_url,
            "--set", "stream=true", "--price", "stub-inventory-1=1000:1000",
        )  # fmt: skip
    assert code == 0, err
    code, out, _ = replay("report", "streamed", "--store", store)
    assert "tokens unknown in 2 trials (calls that reported no usage)" in out
    assert "input tokens p50" not in out  # no percentile over counts that are not known
    code, out, _ = replay("report", "streamed", "--store", store, "--json")
    data = json.loads(out)
    (row,) = data["cases"]
    assert row["n"] == 2 and row["c"] == 2  # passes on its assertions; the budget unchecked
    cassette = next((tmp_path / "cassettes" / "streamed").glob("*.cassette"))
    code, out, _ = replay("show", str(cassette))
    assert "tokens unknown" in out and "3 calls reported no usage: a lower bound" in out
    page = tmp_path / "report.html"
    code, _, _ = replay("report", "streamed", "--store", store, "--html", str(page))
    assert code == 0 and "tokens unknown" in page.read_text()
    trials = Store(store).trials("streamed")
    rules = [g for t in trials for g in t.grades if g.grader == "rule"]
    assert len(rules) == 2
    for grade in rules:
        assert any(
            e.startswith("cost budget not checked: 3 LLM calls reported no token usage")
            for e in grade.evidence
        )
