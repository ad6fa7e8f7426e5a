"""The results store knows its version: old stores are brought up to date, newer ones refused."""

from __future__ import annotations

import sqlite3
from contextlib import closing
from pathlib import Path

import pytest

from recorder import ConfigError, ToolEvent, read_cassette
from replay import RunSpec, Store, build_report, execute
from tests.helpers import REPO

CASE = REPO / "examples" / "shop" / "cases" / "refund-4812.yaml"

VERSION_1 = """
CREATE TABLE runs (name TEXT PRIMARY KEY, spec TEXT, pins TEXT, started TEXT, finished TEXT);
CREATE TABLE trials (run TEXT, case_id TEXT, idx INTEGER, suite TEXT, verdict TEXT,
  score FLOAT, cassette TEXT, steps INTEGER, input_tokens INTEGER, output_tokens INTEGER,
  latency FLOAT, cost FLOAT, tags TEXT, PRIMARY KEY (run, case_id, idx));
CREATE TABLE grades (run TEXT, case_id TEXT, idx INTEGER, grader TEXT, verdict TEXT,
  score FLOAT, veto INTEGER, evidence TEXT, advisory INTEGER, meta TEXT);
CREATE TABLE labels (run TEXT, case_id TEXT, idx INTEGER, dimension TEXT, verdict TEXT,
  note TEXT, labeled TEXT, PRIMARY KEY (run, case_id, idx, dimension));
INSERT INTO runs VALUES ('old', '{}', '{"mode": "review"}', '2026-01-01T00:00:00', NULL);
INSERT INTO trials VALUES ('old', 'refund-4812', 0, 'capability', 'pass', NULL, NULL, 3,
  100, 20, 0.5, NULL, '[]');
INSERT INTO grades VALUES ('old', 'refund-4812', 0, 'agent', 'error',
  NULL, 0, '["agent raised RuntimeError: boom"]', 0, NULL);
"""


def test_a_store_written_before_versions_is_upgraded_and_still_reported(tmp_path: Path) -> None:
    path = tmp_path / "old.db"
    with closing(sqlite3.connect(path)) as conn:
        conn.executescript(VERSION_1)
    store = Store(path)
    (trial,) = store.trials("old")
    assert trial["verdict"] == "pass" and trial["cause"] is None and trial["tool_calls"] is None
    with closing(sqlite3.connect(path)) as conn:
        assert conn.execute("PRAGMA user_version").fetchone()[0] == 2
    report = build_report(store, "old")
    (case,) = report.cases
    assert case.metrics.counts.n == 1 and case.tool_use.selection is None  # unknown, not 0


def test_a_store_from_a_newer_version_is_refused_with_what_to_do(tmp_path: Path) -> None:
    path = tmp_path / "new.db"
    Store(path)
    with closing(sqlite3.connect(path)) as conn:
        conn.execute("PRAGMA user_version = 99")
    with pytest.raises(ConfigError, match=r"written by a newer agent-replay .* upgrade"):
        Store(path)


def test_a_trial_is_stored_with_its_tool_use(tmp_path: Path) -> None:
    store = Store(tmp_path / "r.db")
    spec = RunSpec(name="rev", cases=[str(CASE)], mode="review", cassettes=str(REPO / "cassettes"))
    execute(spec, store)
    (trial,) = store.trials("rev")
    golden = read_cassette(REPO / "cassettes" / "refund-4812.cassette")
    assert trial["tool_calls"] == sum(isinstance(e, ToolEvent) for e in golden.events) > 0
    assert trial["loops"] == 0
    assert trial["selection"] == 1.0 and trial["arguments"] == 1.0  # as the reference solution
    assert trial["cause"] is None and trial["cause_detail"] == []
    (case,) = build_report(store, "rev").cases
    assert case.tool_use.selection == 1.0
