"""The demo end to end, and the committed cassettes as golden files."""

from __future__ import annotations

import sqlite3
import subprocess
import sys
from pathlib import Path

import pytest

from examples.shop import record_refund
from recorder import ToolEvent, read_cassette
from tests.helpers import REPO

COMMITTED = sorted((REPO / "cassettes").rglob("*.cassette"))
"""The demo's cassette in the current format, and one per older format (``format-N/``)."""


def test_demo_records_the_refund(tmp_path: Path) -> None:
    path = tmp_path / "refund.cassette"
    record_refund(path)
    cassette = read_cassette(path)
    assert cassette.complete and cassette.footer is not None
    assert [e.name for e in cassette.events if isinstance(e, ToolEvent)] == [
        "lookup_order",
        "issue_refund",
        "update_order_status",
        "write_ledger_entry",
        "send_email",
    ]
    diff = cassette.footer.state_diff
    assert diff is not None and sorted(diff) == ["emails", "ledger", "orders", "refunds"]
    assert "inventory" not in diff and "customers" not in diff
    assert cassette.footer.final_answer is not None and "4812" in cassette.footer.final_answer


def test_demo_command_line(tmp_path: Path) -> None:
    out = tmp_path / "demo.cassette"
    subprocess.run([sys.executable, "-m", "examples.shop", str(out)], cwd=REPO, check=True)
    shown = subprocess.run(
        [Path(sys.executable).with_name("replay"), "show", str(out)],
        cwd=REPO,
        check=True,
        capture_output=True,
        text=True,
    )
    assert "final answer: I refunded $35.00 for order 4812" in shown.stdout


def test_there_are_committed_cassettes() -> None:
    assert COMMITTED, "cassettes/ should hold the demo's example cassette"


@pytest.mark.parametrize("path", COMMITTED, ids=lambda p: str(p.relative_to(REPO / "cassettes")))
def test_committed_cassettes_read_and_round_trip(path: Path, tmp_path: Path) -> None:
    from recorder._writer import CassetteWriter

    cassette = read_cassette(path)
    assert cassette.complete
    copy = tmp_path / path.name
    writer = CassetteWriter(copy, cassette.header)
    for event in cassette.events:
        writer.write(event)
    writer.close(cassette.footer)
    again = read_cassette(copy)
    assert (again.header, again.events, again.footer) == (
        cassette.header,
        cassette.events,
        cassette.footer,
    )


def test_committed_demo_cassette_matches_the_fixture() -> None:
    cassette = read_cassette(REPO / "cassettes" / "refund-4812.cassette")
    assert cassette.header.fixture_source == "examples/shop/fixture.sql"
    conn = sqlite3.connect(":memory:")
    conn.executescript((REPO / cassette.header.fixture_source).read_text())
    from recorder import world_hash

    pin = cassette.header.fixture_hash  # (committed before hash v2: a v1 pin)
    assert pin is not None and world_hash(conn, like=pin) == pin


def test_demo_replay_steps(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    from examples.shop import demo

    cassettes = tmp_path / "cassettes"
    record_refund(cassettes / "refund-4812.cassette")
    demo.main(str(cassettes), str(tmp_path / "demo.db"))
    out = capsys.readouterr().out
    assert "unsupported 1" in out
    assert (
        "replay: fixture unsupported: lookup_order(order_id=4813); nearest recorded: "
        "lookup_order(order_id=4812), differing in ['order_id']: 4812 -> 4813"
    ) in out
    assert "pass^8" in out and "suite pass^k (95% interval): k=1 " in out
    assert "refund-4812 failed because:" in out
    # It ends with the suite's balance: two cases to act on, one to refrain from.
    assert "$ replay suite-health --store" in out
    assert "balance: regression: act 2, refrain 1, undeclared 0" in out
    assert "unbalanced" not in out
    # Today's graders give every stored trial of the demo the verdict it has, grader by
    # grader: the offline run's unsupported call, the flaky trials, the fault, the violation.
    from replay import Store, regrade

    store = Store(tmp_path / "demo.db")
    for run in store.runs():
        result = regrade(store, run, max_drift=0.0)
        assert (result.regraded, result.skipped) == (len(store.trials(run)), ()), run
        assert result.passed and not [g for g in result.graders if g.changed], run


def test_a_format_2_cassette_reads_as_what_it_recorded() -> None:
    """Before format 3 no host was ignored and missing usage counted as 0: read as such."""
    old = read_cassette(REPO / "cassettes" / "format-2" / "refund-4812.cassette")
    assert old.header.version == 2 and old.header.ignore_hosts is None
    usage = old.summary().usage
    assert usage.llm_calls == 6 and usage.llm_calls_without_usage == 0 and usage.ignored == {}
    now = read_cassette(REPO / "cassettes" / "refund-4812.cassette")
    assert now.header.version == 3 and "api.openai.com/v1/traces" in (now.header.ignore_hosts or [])
    assert [e.kind for e in old.events] == [e.kind for e in now.events]
