"""`replay promote`: an incident cassette becomes a case that fails on it and passes once fixed."""

from __future__ import annotations

import sqlite3
from pathlib import Path

from examples.shop import (
    INSTRUCTION,
    agent,
    make_tools,
    naive_refund_policy,
    refund_policy,
    run_agent,
)
from recorder import read_cassette, record, world_hash
from replay import load_case, offline, review, sandbox
from replay.graders import Verdict
from replay.stub_llm import ScriptedPolicy, StubLLM
from tests.helpers import REPO, replay, shop_world

CASE = load_case(REPO / "examples" / "shop" / "cases" / "refund-4812.yaml")


def test_a_duplicate_refund_incident_becomes_a_regression_case(tmp_path: Path) -> None:
    turns = list(naive_refund_policy().turns)
    turns.insert(2, turns[1])  # the incident: issue_refund twice, with no idempotency key
    incident = tmp_path / "incident.cassette"
    with StubLLM(ScriptedPolicy(turns, final=refund_policy().final)) as llm:
        sandbox(CASE, agent, make_tools, incident, llm_base_url=llm.openai_base_url)

    out = tmp_path / "regression"
    code, _, err = replay(
        "promote",
        str(incident),
        "--id",
        "refund-once",
        "--out",
        str(out),
        "--expect",
        "refunds.count(order_id=4812) == 1",
    )
    assert code == 0, err
    case = load_case(out / "refund-once.yaml")
    assert case.suite.value == "regression" and case.instruction == CASE.instruction
    assert case.assertions == ["refunds.count(order_id=4812) == 1"]
    text = (out / "refund-once.yaml").read_text()
    assert '# - "diff.refunds.inserted == 2"' in text  # the scaffold, commented
    assert '# - "orders[4812].status == \\"refunded\\""' in text
    frozen = out / "cassettes" / "refund-once.cassette"
    assert read_cassette(frozen).header.case_id == "refund-once"

    # It fails on the incident ...
    assert review(case, frozen).outcome.verdict is Verdict.FAIL
    # ... and passes on the fixed agent (it refunds once; the calls it makes are the
    # incident's, so offline replay can answer them), offline and in sandbox.
    with StubLLM(naive_refund_policy()) as llm:
        fixed_offline = offline(
            case,
            agent,
            make_tools,
            read_cassette(frozen),
            tmp_path / "o.cassette",
            llm_base_url=llm.openai_base_url,
            llm="live",
        )
        fixed_sandbox = sandbox(
            case, agent, make_tools, tmp_path / "s.cassette", llm_base_url=llm.openai_base_url
        )
    assert fixed_offline.outcome.verdict is Verdict.PASS, fixed_offline.outcome.evidence
    assert fixed_sandbox.outcome.verdict is Verdict.PASS, fixed_sandbox.outcome.evidence


def test_promote_refuses_a_bad_expectation_in_one_line(tmp_path: Path) -> None:
    code, _, err = replay(
        "promote",
        str(REPO / "cassettes" / "refund-4812.cassette"),
        "--id",
        "x",
        "--out",
        str(tmp_path),
        "--expect",
        "refunds.count( == 1",
    )
    assert code == 2 and err.startswith("error: ") and err.count("\n") == 1


def test_a_session_recorded_with_record_on_a_live_database_is_promoted(tmp_path: Path) -> None:
    """The README's ``record()``: the world is the live file; promote undoes the session on it."""

    conn = shop_world(tmp_path)  # a live database file, changed by the session
    started = world_hash(conn)
    incident = tmp_path / "incident.cassette"
    with StubLLM(refund_policy()) as llm, record(incident, world=conn, case_id="refund") as rec:
        rec.answer(run_agent(INSTRUCTION, make_tools(conn), base_url=llm.openai_base_url))
    conn.commit()
    assert world_hash(conn) != started
    out = tmp_path / "regression"
    args = ["promote", str(incident), "--id", "refund-again", "--out", str(out)]
    code, _, err = replay(*args, "--expect", 'orders[4812].status == "refunded"')
    assert code == 0, err
    case = load_case(out / "refund-again.yaml")
    copy = out / "refund-again.fixture.db"
    assert case.fixture.samefile(copy)
    assert world_hash(sqlite3.connect(copy)) == started  # the world as the session found it
    assert review(case, out / "cassettes" / "refund-again.cassette").outcome.verdict is Verdict.PASS

    # Changed otherwise since: no guess, a one-line error.
    conn.execute("UPDATE customers SET name = name || '!'")
    conn.commit()
    code, _, err = replay(*args, "--expect", 'orders[4812].status == "refunded"')
    assert code == 2 and "changed since the recording" in err and err.count("\n") == 1
