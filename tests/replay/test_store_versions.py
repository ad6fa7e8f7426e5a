"""The results store knows its version: old stores are brought up to date, newer ones refused."""

from __future__ import annotations

import json
import sqlite3
from contextlib import closing
from pathlib import Path

import pytest

from recorder import ConfigError, ToolEvent, read_cassette
from replay import RunSpec, Store, Thresholds, TrialRecord, TrialUsage, build_report, execute, gate
from replay.graders import Cause, Verdict
from tests.helpers import REPO, replay

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
INSERT INTO trials VALUES ('old', 'refund-4812', 1, 'capability', 'error', NULL, NULL, 1,
  10, 2, 0.1, NULL, '[]');
INSERT INTO grades VALUES ('old', 'refund-4812', 0, 'rule', 'pass', NULL, 0, '[]', 0, NULL);
INSERT INTO grades VALUES ('old', 'refund-4812', 1, 'user', 'error',
  NULL, 0, '["the simulated user failed: its endpoint answered HTTP 500"]', 0, NULL);
"""


def test_a_store_written_before_versions_is_upgraded_and_still_reported(tmp_path: Path) -> None:
    path = tmp_path / "old.db"
    with closing(sqlite3.connect(path)) as conn:
        conn.executescript(VERSION_1)
    store = Store(path)
    passed, failed = store.trials("old")
    assert passed.verdict is Verdict.PASS and passed.cause is None
    assert passed.tool_use is None  # not measured then
    # Version 1 kept the cause of an error as a grade named after it: now the trial's cause.
    assert failed.cause is Cause.USER
    assert failed.cause_detail == ("the simulated user failed: its endpoint answered HTTP 500",)
    assert [g.grader for g in passed.grades] == ["rule"] and failed.grades == ()
    with closing(sqlite3.connect(path)) as conn:
        assert conn.execute("PRAGMA user_version").fetchone()[0] == 8
    assert passed.guards == () and failed.guards == ()  # no limit fired then
    pins = store.run("old").pins  # type: ignore[union-attr]
    assert pins["llm"] is None  # review calls no LLM
    assert pins["graders"]["state"] == {"version": "1"}  # what every trial got then
    report = build_report(store, "old")
    (case,) = report.cases
    assert case.metrics.counts.verdicts["error"] == 1 and case.failures == []
    assert case.user_failures == [
        ("user: the simulated user failed: its endpoint answered HTTP 500", 1)
    ]
    assert case.tool_use.selection is None and case.tool_use.unmeasured == 2  # unknown, not 0
    code, out, _ = replay("report", "old", "--store", str(path))
    assert code == 0 and "tool use: unknown (trials stored before" in out


def test_a_version_2_store_gains_guards_and_keeps_its_rows(tmp_path: Path) -> None:
    path = tmp_path / "v2.db"
    Store(path)
    with closing(sqlite3.connect(path)) as conn:  # version 2's trials had no guards column
        conn.execute("ALTER TABLE trials DROP COLUMN guards")
        conn.execute("INSERT INTO runs (name, spec, pins) VALUES ('r', '{}', '{}')")
        conn.execute(
            "INSERT INTO trials (run, case_id, idx, verdict, cause, cause_detail) "
            """VALUES ('r', 'c', 0, 'error', 'agent', '["agent raised X: y"]')"""
        )
        conn.execute(  # a registered grader named like a version 1 cause stays a grade
            "INSERT INTO grades (run, case_id, idx, grader, verdict, evidence) "
            "VALUES ('r', 'c', 0, 'user', 'pass', '[]')"
        )
        conn.execute("PRAGMA user_version = 2")
        conn.commit()
    store = Store(path)
    (trial,) = store.trials("r")
    assert trial.guards == () and trial.cause_detail == ("agent raised X: y",)
    assert [g.grader for g in trial.grades] == ["user"]
    with closing(sqlite3.connect(path)) as conn:
        assert conn.execute("PRAGMA user_version").fetchone()[0] == 8


def test_a_version_3_store_gains_duration_its_trials_unknown_there(tmp_path: Path) -> None:
    path = tmp_path / "v3.db"
    Store(path)
    with closing(sqlite3.connect(path)) as conn:  # version 3's trials had no duration column
        conn.execute("ALTER TABLE trials DROP COLUMN duration")
        conn.execute("INSERT INTO runs (name, spec, pins) VALUES ('r', '{}', '{}')")
        conn.execute(
            "INSERT INTO trials (run, case_id, idx, verdict, latency) "
            "VALUES ('r', 'c', 0, 'pass', 0.25)"
        )
        conn.execute("PRAGMA user_version = 3")
        conn.commit()
    store = Store(path)
    (old,) = store.trials("r")
    assert old.usage.latency == 0.25 and old.usage.duration is None  # unknown, not 0
    store.add_trial(
        "r",
        TrialRecord(
            case_id="c", idx=1, verdict=Verdict.PASS, usage=TrialUsage(latency=0.25, duration=0.5)
        ),
    )
    assert [t.usage.duration for t in Store(path).trials("r")] == [None, 0.5]
    with closing(sqlite3.connect(path)) as conn:
        assert conn.execute("PRAGMA user_version").fetchone()[0] == 8


def test_a_version_4_store_keeps_its_labels_as_nobodys_and_gains_labellers_and_golden(
    tmp_path: Path,
) -> None:
    path = tmp_path / "v4.db"
    with closing(sqlite3.connect(path)) as conn:  # version 4: labels keyed without a labeller
        conn.executescript(VERSION_1)
        conn.execute("INSERT INTO labels VALUES ('old', 'refund-4812', 0, '', 'fail', 'no', 'x')")
        conn.execute("PRAGMA user_version = 4")
        conn.commit()
    store = Store(path)
    (kept,) = store.labels("old")
    assert (kept.verdict, kept.note, kept.labeller) == (Verdict.FAIL, "no", "")
    store.add_label("old", "refund-4812", 0, "pass", labeller="ana")  # a second person's
    store.add_label("old", "refund-4812", 0, "unsure", labeller="ben")
    labels = {(label.labeller, label.verdict) for label in store.labels("old")}
    assert labels == {("", Verdict.FAIL), ("ana", Verdict.PASS), ("ben", Verdict.UNKNOWN)}
    run = store.run("old")
    assert run is not None and not run.golden
    store.set_golden("old")
    assert store.golden_runs() == ["old"]
    with closing(sqlite3.connect(path)) as conn:
        assert conn.execute("PRAGMA user_version").fetchone()[0] == 8


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
    use = trial.tool_use
    assert use is not None
    assert use.calls == sum(isinstance(e, ToolEvent) for e in golden.events) > 0
    assert use.loops == 0
    assert use.selection == 1.0 and use.arguments == 1.0  # as the reference solution
    assert trial.cause is None and trial.cause_detail == ()
    (case,) = build_report(store, "rev").cases
    assert case.tool_use.selection == 1.0


def test_a_baseline_stored_by_version_1_can_be_gated_against_a_new_run(tmp_path: Path) -> None:
    spec = RunSpec(name="new", cases=[str(CASE)], mode="review", cassettes=str(REPO / "cassettes"))
    fresh = Store(tmp_path / "fresh.db")
    execute(spec, fresh)
    pins = dict(fresh.run("new").pins)  # type: ignore[union-attr]
    old_pins = {k: v for k, v in pins.items() if k != "graders"} | {"llm": "live"}  # as v1 wrote
    (trial,) = fresh.trials("new")
    path = tmp_path / "old.db"
    with closing(sqlite3.connect(path)) as conn:
        conn.executescript(VERSION_1.split("INSERT")[0])  # version 1's tables, empty
        conn.execute(
            # a finished run (a gate refuses an unfinished one)
            "INSERT INTO runs VALUES ('base', '{}', ?, '2026-01-01T00:00:00', "
            "'2026-01-01T00:01:00')",
            (json.dumps(old_pins),),
        )
        conn.execute(
            "INSERT INTO trials (run, case_id, idx, verdict) VALUES ('base', ?, 0, 'pass')",
            (trial.case_id,),
        )
        conn.commit()
    store = Store(path)
    execute(spec, store)
    result = gate(store, "base", "new", Thresholds(min_pass1=0.9))
    assert result.holds and result.comparison is not None
    (change,) = result.comparison.changes  # the old run's trial, paired with the new one
    assert (change.pass1_a, change.pass1_b) == (1.0, 1.0)
