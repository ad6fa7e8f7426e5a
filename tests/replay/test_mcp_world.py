"""A trial's tools over MCP: an MCP call is the same tool event as a direct one, in every mode."""

from __future__ import annotations

from pathlib import Path

import pytest

from recorder import HttpEvent, ToolEvent, read_cassette
from replay import load_case, offline, sandbox
from replay.modes import NO_LLM_URL
from tests.helpers import REPO
from tests.replay.mcp_agents import REFUND, refund_over_mcp

pytest.importorskip("mcp", reason="the mcp SDK is not installed (pip install 'agent-replay[mcp]')")

CASE = load_case(REPO / "examples" / "shop" / "cases" / "refund-4812.yaml")


def _tools():  # type: ignore[no-untyped-def]
    from examples.shop import make_tools

    return make_tools


@pytest.fixture
def recorded(tmp_path: Path) -> Path:
    """A sandbox trial of the MCP agent: real tools behind the MCP server."""
    out = tmp_path / "sandbox.cassette"
    result = sandbox(CASE, refund_over_mcp, _tools(), out, llm_base_url=NO_LLM_URL)
    assert result.outcome.verdict.value == "pass", result.outcome.evidence
    return out


def test_mcp_calls_are_tool_events_with_deltas_and_the_mcp_traffic_is_not_http(
    recorded: Path,
) -> None:
    cassette = read_cassette(recorded)
    calls = [e for e in cassette.events if isinstance(e, ToolEvent)]
    assert [(c.name, c.args) for c in calls] == [(n, a) for n, a in REFUND]
    refund = calls[1]
    assert refund.effect == "write" and refund.delta and "refunds" in refund.delta
    assert not any(isinstance(e, HttpEvent) for e in cassette.events)  # a channel, unrecorded


def test_offline_answers_the_mcp_calls_from_the_cassette(recorded: Path, tmp_path: Path) -> None:
    result = offline(CASE, refund_over_mcp, _tools(), read_cassette(recorded), tmp_path / "o")
    assert result.outcome.verdict.value == "pass", result.outcome.evidence
    assert result.trial.diff.tables["refunds"].inserted  # the recorded delta, applied


def test_an_unseen_mcp_call_is_an_mcp_error_with_the_unsupported_message(
    recorded: Path, tmp_path: Path
) -> None:
    result = offline(
        CASE,
        refund_over_mcp,
        _tools(),
        read_cassette(recorded),
        tmp_path / "o",
        settings={"amount": 40.0},
    )
    assert result.outcome.verdict.value == "unsupported"
    answer = result.trial.answer or ""
    assert answer.startswith("issue_refund failed: FixtureUnsupported: fixture unsupported:")
    assert "nearest recorded" in answer and "amount" in answer


def test_a_fault_is_injected_into_an_mcp_call_as_into_a_direct_one(tmp_path: Path) -> None:
    from replay.surroundings._faults import Fault, FaultInjector

    injector = FaultInjector([Fault(kind="raise", tool="issue_refund")], 0, CASE.id, 0)
    result = sandbox(
        CASE, refund_over_mcp, _tools(), tmp_path / "f.cassette", llm_base_url=NO_LLM_URL,
        faults=injector,
    )  # fmt: skip
    assert (result.trial.answer or "").startswith("issue_refund failed: ")
    assert injector.injected  # the fault fired, on the MCP call
    refunds = result.trial.diff.tables.get("refunds")
    assert refunds is None or not refunds.inserted  # the refund never ran
