"""A report reads the store's summaries and a few columns of the trials' rows, no record.

Whatever it reads, it says what the stored trials say: every figure of ``build_report``
and every byte of ``report --json`` equal what the trials' records give, for trials
written one by one, replaced, or stored by an older version and brought up to date.
"""

from __future__ import annotations

import json
import math
import random
import sqlite3
import statistics
import subprocess
import sys
from contextlib import closing
from pathlib import Path

import pytest

from replay import (
    Expects,
    GradeRecord,
    Store,
    Suite,
    Thresholds,
    TrialRecord,
    TrialUsage,
    build_report,
    gate,
)
from replay.graders import Cause, TrialToolUse, Verdict
from replay.modes import Guard
from replay.results import report_json, report_json_text
from replay.results._causes import cause_groups
from replay.results._report import direction
from replay.results._schema import STORE_VERSION
from replay.results._tooluse import run_tool_use
from tests.helpers import HANG_GUARD_S

HELD = ("a == 1", "b == 2", "c == 3")


def _trial(rng: random.Random, case: int, idx: int) -> TrialRecord:
    """A trial with some of everything a report reads: usage, tool use, credit, causes."""
    verdict = rng.choice(list(Verdict))
    cause = None
    guards: tuple[Guard, ...] = ()
    if verdict is Verdict.ERROR and rng.random() < 0.8:
        cause = rng.choice(list(Cause))
        if cause is Cause.LIMIT and rng.random() < 0.5:
            guards = (Guard.TIMEOUT,)
    cut = rng.randint(0, len(HELD))
    grades = [
        GradeRecord(
            "state",
            Verdict.PASS if verdict is Verdict.PASS else Verdict.FAIL,
            cut / len(HELD),
            evidence=() if verdict is Verdict.PASS else (f"expected {HELD[cut - 1]}",),
            meta={"held": list(HELD[:cut]), "failed": list(HELD[cut:])} if case % 3 else {},
        ),
        GradeRecord("rule", rng.choice([Verdict.PASS, Verdict.FAIL]), veto=True,
                    evidence=("forbidden tool",)),
        GradeRecord("sandbox", rng.choice([Verdict.PASS, Verdict.FAIL]), evidence=("refused",)),
        GradeRecord("judge", Verdict.UNKNOWN, evidence=("cannot tell",), advisory=True),
    ]  # fmt: skip
    unknown = rng.random() < 0.1
    measured = rng.random() < 0.8
    return TrialRecord(
        case_id=f"case-{case}",
        idx=idx,
        suite=(Suite.REGRESSION, Suite.CAPABILITY, None)[case % 3],
        verdict=verdict,
        score=cut / len(HELD),
        cassette=rng.choice([None, "", f"c{case}/{idx}.cassette"]),
        usage=TrialUsage(
            rng.choice([None, 0, rng.randint(1, 30)]),
            None if unknown else rng.randint(10, 9000),
            rng.randint(1, 500),
            rng.choice([None, rng.uniform(0.1, 30.0)]),
            rng.choice([None, round(rng.uniform(0, 0.1), 6)]),
        ),
        tags=("critical",) if case == 0 else (),
        cause=cause,
        cause_detail=tuple(rng.sample(["boom", "bang"], rng.randint(0, 2))) if cause else (),
        tool_use=TrialToolUse(
            rng.randint(0, 9),
            rng.choice([None, 0.5, 1.0, 1 / 3]),
            rng.choice([None, 0.25, 1.0]),
            rng.choice([None, True, False]),
            rng.choice([0, 0, 1, 2]),
        )
        if measured
        else None,
        guards=guards,
        grades=tuple(rng.sample(grades, rng.randint(0, len(grades)))),
        expects=rng.choice([None, Expects.ACT, Expects.REFRAIN]) if case % 4 else None,
    )


def _trials(seed: int, cases: int = 7, each: int = 15) -> list[TrialRecord]:
    rng = random.Random(seed)
    return [_trial(rng, case, idx) for case in range(cases) for idx in range(each)]


def _fill(store: Store, run: str, trials: list[TrialRecord]) -> None:
    store.start_run(run, {}, {"mode": "review", "model": run})
    order = list(trials)
    random.Random(len(trials)).shuffle(order)  # (trials arrive as they finish)
    for trial in order:
        store.add_trial(run, trial)
    store.finish_run(run)


def _text(store: Store, run: str) -> str:
    pieces: list[str] = []
    report_json_text(build_report(store, run), pieces.append)
    return "".join(pieces)


def _from_records(store: Store, run: str) -> dict[str, object]:
    """What the trials' records say of what the report reads from their rows."""
    trials = store.trials(run)
    by_case: dict[str, list[TrialRecord]] = {}
    for t in trials:
        by_case.setdefault(t.case_id, []).append(t)
    per_case, overall = run_tool_use(trials)
    graded = (Verdict.PASS, Verdict.FAIL)
    shares = {
        case: [p.share for t in rows if t.verdict in graded and (p := t.partial_credit)]
        for case, rows in by_case.items()
    }
    every = [x for v in shares.values() for x in v]
    return {
        "tool_use": overall,
        "cases": {
            case: (
                rows[0].suite.value if rows[0].suite else "",
                direction(rows),
                next((t.cassette for t in rows if not t.passed and t.cassette), None),
                per_case[case],
                statistics.quantiles(shares[case], n=4, method="inclusive")
                if len(shares[case]) > 1
                else shares[case] * 3,
            )
            for case, rows in by_case.items()
        },
        "partial": (statistics.fmean(every), min(every), max(every), len(every)),
        "causes": cause_groups(trials),
    }


def _from_report(store: Store, run: str) -> dict[str, object]:
    report = build_report(store, run)
    assert report.partial is not None
    return {
        "tool_use": report.tool_use,
        "cases": {
            c.case_id: (
                c.suite,
                c.expects,
                c.failing_cassette,
                c.tool_use,
                [c.partial.q1, c.partial.median, c.partial.q3] if c.partial else [],
            )
            for c in report.cases
        },
        "partial": (report.partial.mean, report.partial.low, report.partial.high,
                    report.partial.trials),
        "causes": report.causes,
    }  # fmt: skip


def test_a_report_reads_from_rows_what_the_records_say(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    store = Store(tmp_path / "r.db")
    _fill(store, "r", _trials(1))
    expected = _from_records(store, "r")
    with monkeypatch.context() as patched:  # (no record is read to make the report)
        patched.setattr(Store, "trials", lambda *_, **__: pytest.fail("a record was read"))
        got = _from_report(store, "r")
        text = _text(store, "r")
    assert got == expected
    report = build_report(store, "r")
    assert report.trials == store.trials("r")  # (read when asked for)
    assert text == json.dumps(report_json(report), indent=2)


def test_a_replaced_trial_is_reported_as_its_replacement(tmp_path: Path) -> None:
    trials = _trials(2)
    store = Store(tmp_path / "r.db")
    _fill(store, "r", trials)
    rng = random.Random(5)
    replaced = list(trials)
    for i in (0, 3, 17, 40, 3):
        replaced[i] = _trial(rng, int(trials[i].case_id.split("-")[1]), trials[i].idx)
        store.add_trial("r", replaced[i])
    once = Store(tmp_path / "once.db")
    _fill(once, "r", replaced)
    assert _from_report(store, "r") == _from_records(store, "r")
    assert _text(store, "r") == _text(once, "r")


@pytest.mark.parametrize("version", [5, 6, 7])
def test_an_older_store_is_brought_up_to_date_and_reports_the_same(
    tmp_path: Path, version: int
) -> None:
    path = tmp_path / "r.db"
    store = Store(path)
    _fill(store, "a", _trials(3))
    _fill(store, "b", _trials(4, cases=5))
    before = {run: _text(store, run) for run in ("a", "b")}
    alone = gate(store, None, "b", Thresholds(min_pass1=0.1, max_failing_critical=0))
    store.db.conn.close()
    with closing(sqlite3.connect(path)) as conn:  # as that version left it
        conn.execute("DROP TABLE case_rows")
        for column in ("failure", "why", "credit") if version < 7 else ():
            conn.execute(f"ALTER TABLE trials DROP COLUMN {column}")
        if version < 6:
            conn.execute("DROP TABLE case_summaries")
        conn.execute(f"PRAGMA user_version = {version}")
        conn.commit()
    old = Store(path)
    assert {run: _text(old, run) for run in ("a", "b")} == before
    assert _from_report(old, "b") == _from_records(old, "b")
    assert gate(old, None, "b", Thresholds(min_pass1=0.1, max_failing_critical=0)) == alone
    with closing(sqlite3.connect(path)) as conn:
        assert conn.execute("PRAGMA user_version").fetchone()[0] == STORE_VERSION
        kept = conn.execute("SELECT run, COUNT(*) FROM case_rows GROUP BY run").fetchall()
    assert kept == [("a", 7), ("b", 5)]  # (its finished runs' cases kept as it was opened)


def test_a_finished_run_is_read_as_kept_and_a_case_written_since_from_its_rows(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A finished run's cases are kept as a report reads them (one read, not every row);
    a trial written since drops its case's, which is worked out again when read."""
    store = Store(tmp_path / "r.db")
    trials = _trials(8)
    store.start_run("r", {}, {"mode": "review", "model": "r"})
    for trial in trials:
        store.add_trial("r", trial)
    going = _text(store, "r")  # (a run still going: every case from its rows)
    store.finish_run("r")
    from replay.results import _rows

    worked: list[set[str] | None] = []
    real = _rows._worked_out

    def watched(conn: sqlite3.Connection, run: str, only: set[str] | None = None) -> object:
        worked.append(only)
        return real(conn, run, only)

    rng = random.Random(9)
    later = [_trial(rng, 3, 4), _trial(rng, 3, 15)]  # (a trial replaced, and a new one)
    fresh = Store(tmp_path / "fresh.db")
    _fill(fresh, "r", [t for t in trials if (t.case_id, t.idx) != ("case-3", 4)] + later)
    with monkeypatch.context() as patched:
        patched.setattr(_rows, "_worked_out", watched)
        assert _text(store, "r") == going
        assert worked == []
        for trial in later:
            store.add_trial("r", trial)
        assert _text(store, "r") == _text(fresh, "r")
    assert worked == [{"case-3"}]
    assert _from_report(store, "r") == _from_records(store, "r")


def test_the_gate_on_its_own_reads_the_summaries_and_its_cases_when_asked(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    store = Store(tmp_path / "r.db")
    _fill(store, "r", _trials(6))
    thresholds = Thresholds(min_pass1=0.2, min_pass_k=(2, 0.1), max_unsupported=0.5,
                            max_failing_critical=0)  # fmt: skip
    with monkeypatch.context() as patched:
        patched.setattr(Store, "trials", lambda *_, **__: pytest.fail("a record was read"))
        patched.setattr(
            "replay.results._report.read_rows", lambda *_: pytest.fail("a row was read")
        )
        result = gate(store, None, "r", thresholds)
    texts = [check.text for check in result.checks]
    assert texts[0].startswith("suite pass^1 ") and texts[-1].startswith("unsupported + error")
    assert result.cases == build_report(store, "r").cases


def test_reading_a_report_imports_neither_sqlite_utils_nor_the_runner(tmp_path: Path) -> None:
    store = Store(tmp_path / "r.db")
    _fill(store, "r", _trials(7, cases=2, each=3))
    code = (
        "import sys\n"
        "from replay._cli.main import cli\n"
        "from replay import Store, build_report\n"
        f"build_report(Store({str(tmp_path / 'r.db')!r}, create=False), 'r')\n"
        "cli.commands['report']\n"
        "print(sorted(m for m in ('sqlite_utils', 'replay._cli.run', 'replay.runs') "
        "if m in sys.modules))\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, timeout=HANG_GUARD_S
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "[]"


def test_a_report_read_in_a_snapshot_agrees_with_itself_while_a_run_writes(
    tmp_path: Path,
) -> None:
    """Another process stores trials (of a new case too) while a report is read: inside
    ``Store.snapshot()`` (as ``replay report`` and ``gate`` read) the report is of one
    state, its counts and its trials alike; the next one sees the new trials."""
    path = tmp_path / "results.db"
    trials = _trials(5, cases=3, each=4)
    _fill(Store(path), "nightly", trials)
    reader, writer = Store(path), Store(path)
    before = _text(reader, "nightly")
    extra = _trials(6, cases=5, each=2)[-4:]  # (cases 3 and 4: new to the run)
    with reader.snapshot():
        first = build_report(reader, "nightly")  # (the summaries read: the state taken)
        for trial in extra:
            writer.add_trial("nightly", trial)
        pieces: list[str] = []
        report_json_text(build_report(reader, "nightly"), pieces.append)
        assert "".join(pieces) == before
        assert len(first.trials) == len(trials)
    after = json.loads(_text(reader, "nightly"))
    assert len(after["trials"]) == len(trials) + len(extra)


def test_a_damaged_kept_case_is_worked_out_from_its_rows_again(tmp_path: Path) -> None:
    store = Store(tmp_path / "r.db")
    _fill(store, "r", _trials(10))
    before = _text(store, "r")
    for garbage in (b"\xc1", b"\x93\x01\x02\x03", b"\x92\x01"):
        with store.db.conn:
            store.db.conn.execute(
                "UPDATE case_rows SET data = ? WHERE run = 'r' AND case_id = 'case-2'", (garbage,)
            )
        assert _text(store, "r") == before


@pytest.mark.parametrize(
    "column",
    [
        ("case-1", "caf\u00e9 \u2603", 'q"uote\\\n'),
        (0, 7, -3, 2**70),
        (0.1, 1e-300, 12.5, -0.0, 3.0),
        (0.5, math.inf, -math.inf, math.nan),
        (None, "x", None),
        (None, 4, 2.5, True, False, "y"),
        (None, None),
        (),
    ],
)
def test_a_column_of_trial_values_is_written_as_json_writes_each(
    column: tuple[object, ...],
) -> None:
    """(``report --json`` writes its trials column by column, by each type's own writer.)"""
    from replay.results._rows import _column_texts

    assert _column_texts(column) == [json.dumps(value) for value in column]
