"""The store keeps per-case summaries as trials are written; reports read them, not trials.

What a summary says must be what counting the stored trials says, whatever way the
store got there: trials written one by one, a trial replaced, a run deleted, an older
store (before summaries) brought up to date.
"""

from __future__ import annotations

import json
import random
import sqlite3
from collections import Counter
from contextlib import closing
from pathlib import Path

from replay import GradeRecord, Store, Thresholds, TrialRecord, TrialUsage, build_report, gate
from replay.graders import Cause, Verdict
from replay.modes import Guard
from replay.results import compare_runs, report_json, report_json_text
from replay.results._summaries import CaseSummary


def _trial(rng: random.Random, case: str, idx: int) -> TrialRecord:
    """A trial with some of everything a report counts, and evidence lines that tie."""
    verdict = rng.choice(list(Verdict))
    cause = guards = None
    if verdict is Verdict.ERROR:
        cause = rng.choice(list(Cause))
        guards = (Guard.TIMEOUT,) if cause is Cause.LIMIT and rng.random() < 0.5 else ()
    lines = rng.sample(["a", "b", "c", "d"], rng.randint(0, 3))
    grades = [
        GradeRecord("state", rng.choice([Verdict.PASS, Verdict.FAIL]), evidence=tuple(lines)),
        GradeRecord(rng.choice(["rule", "sandbox"]), Verdict.FAIL, veto=rng.random() < 0.5,
                    evidence=(rng.choice(["x", "y"]),)),
    ]  # fmt: skip
    return TrialRecord(
        case_id=case,
        idx=idx,
        verdict=verdict,
        cassette=rng.choice([None, f"{case}-{idx}.cassette"]),
        usage=TrialUsage(steps=rng.randint(1, 9)),
        tags=("critical",) if case == "c0" else (),
        cause=cause,
        cause_detail=tuple(rng.sample(["boom", "bang"], rng.randint(0, 2))) if cause else (),
        guards=guards or (),
        grades=tuple(grades[: rng.randint(0, 2)]),
    )


def _fill(store: Store, run: str, trials: list[TrialRecord], *, shuffled: int = 0) -> None:
    store.start_run(run, {}, {"mode": "review", "model": run})
    order = list(trials)
    if shuffled:  # (trials arrive as they finish, not by case and index)
        random.Random(shuffled).shuffle(order)
    for trial in order:
        store.add_trial(run, trial)
    store.finish_run(run)


def _trials(seed: int, cases: int = 4, each: int = 12) -> list[TrialRecord]:
    rng = random.Random(seed)
    return [_trial(rng, f"c{i}", idx) for i in range(cases) for idx in range(each)]


def _counted(store: Store, run: str) -> dict[str, dict[str, object]]:
    """What counting the stored trials says, as reports counted before summaries."""
    out: dict[str, dict[str, object]] = {}
    by_case: dict[str, list[TrialRecord]] = {}
    for trial in store.trials(run):
        by_case.setdefault(trial.case_id, []).append(trial)
    for case, rows in by_case.items():
        evidence: Counter[str] = Counter()
        user: Counter[str] = Counter()
        graders: dict[str, Counter[str]] = {}
        for t in rows:
            if t.cause is not None:
                into = user if t.cause is Cause.USER else evidence
                for line in t.cause_detail:
                    into[f"{t.cause.value}: {line}"] += 1
        for t in rows:
            for g in t.grades:
                graders.setdefault(g.grader, Counter())[g.verdict.value] += 1
                if g.verdict is not Verdict.PASS:
                    for line in g.evidence:
                        evidence[f"{g.grader}: {line}"] += 1
        out[case] = {
            "verdicts": dict(Counter(t.verdict for t in rows)),
            "failed": sum(t.failed for t in rows),
            "causes": dict(Counter(t.failure for t in rows if t.failure is not None)),
            "guards": list(Counter(g for t in rows for g in t.guards).items()),
            "grades": [(g, v, n) for g, c in graders.items() for v, n in c.items()],
            "evidence": list(evidence.items()),
            "user": list(user.items()),
        }
    return out


def _summarised(store: Store, run: str) -> dict[str, dict[str, object]]:
    def grades(summary: CaseSummary) -> list[tuple[str, str, int]]:
        by_grader: dict[str, dict[str, int]] = {}  # (each grader's, as reports group them)
        for grader, verdict, n in summary.grades:
            by_grader.setdefault(grader, {})[verdict.value] = n
        return [(g, v, n) for g, c in by_grader.items() for v, n in c.items()]

    return {
        s.case_id: {
            "verdicts": dict(s.verdicts),
            "failed": s.failed,
            "causes": dict(s.causes),
            "guards": list(s.guards.items()),
            "grades": grades(s),
            "evidence": list(s.evidence),
            "user": list(s.user),
        }
        for s in store.case_summaries(run)
    }


def test_a_summary_counts_what_the_trials_say_in_the_order_they_say_it(tmp_path: Path) -> None:
    store = Store(tmp_path / "r.db")
    _fill(store, "r", _trials(1), shuffled=3)
    assert _summarised(store, "r") == _counted(store, "r")


def test_a_replaced_trial_takes_its_old_counts_away(tmp_path: Path) -> None:
    trials = _trials(2)
    store = Store(tmp_path / "r.db")
    _fill(store, "r", trials)
    rng = random.Random(9)
    replaced = list(trials)
    for i in [0, 1, 5, 12, 13, 40, 0]:  # (the first trials set where lines are first seen)
        replaced[i] = _trial(rng, trials[i].case_id, trials[i].idx)
        store.add_trial("r", replaced[i])
    assert _summarised(store, "r") == _counted(store, "r")
    once = Store(tmp_path / "once.db")
    _fill(once, "r", replaced)
    assert store.case_summaries("r") == once.case_summaries("r")
    assert report_json(build_report(store, "r")) == report_json(build_report(once, "r"))


def test_a_deleted_run_leaves_no_summary(tmp_path: Path) -> None:
    store = Store(tmp_path / "r.db")
    _fill(store, "a", _trials(3))
    _fill(store, "b", _trials(4))
    store.delete_run("a")
    assert store.case_summaries("a") == []
    assert _summarised(store, "b") == _counted(store, "b")
    _fill(store, "a", _trials(5, cases=2))  # (a name used again starts from nothing)
    assert _summarised(store, "a") == _counted(store, "a")


def test_an_older_store_gains_summaries_and_reports_the_same(tmp_path: Path) -> None:
    path = tmp_path / "r.db"
    store = Store(path)
    _fill(store, "a", _trials(6))
    _fill(store, "b", _trials(7))
    before = {run: report_json(build_report(store, run)) for run in ("a", "b")}
    gated = gate(store, "a", "b", Thresholds(min_pass1=0.1, max_drop=0.5))
    store.db.conn.close()
    with closing(sqlite3.connect(path)) as conn:  # as version 5 left it: no summaries
        conn.execute("DROP TABLE case_summaries")
        conn.execute("PRAGMA user_version = 5")
        conn.commit()
    old = Store(path)
    assert {run: report_json(build_report(old, run)) for run in ("a", "b")} == before
    assert gate(old, "a", "b", Thresholds(min_pass1=0.1, max_drop=0.5)) == gated
    assert _summarised(old, "b") == _counted(old, "b")
    with closing(sqlite3.connect(path)) as conn:
        assert conn.execute("PRAGMA user_version").fetchone()[0] == 8


def test_a_comparison_reads_the_failing_cassette_a_trial_would_give(tmp_path: Path) -> None:
    store = Store(tmp_path / "r.db")
    _fill(store, "a", _trials(8))
    _fill(store, "b", _trials(9))
    by_case: dict[str, list[TrialRecord]] = {}
    for t in store.trials("b"):
        by_case.setdefault(t.case_id, []).append(t)
    for change in compare_runs(store, "a", "b").changes:
        rows = by_case[change.case_id]
        failed = [t for t in rows if t.failed]
        first = next((t.cassette for t in [*failed, *rows] if not t.passed and t.cassette), None)
        assert change.failing_cassette == first


def test_the_json_report_written_in_pieces_is_the_json_report(tmp_path: Path) -> None:
    store = Store(tmp_path / "r.db")
    _fill(store, "r", _trials(10, cases=6, each=20))
    report = build_report(store, "r")
    pieces: list[str] = []
    report_json_text(report, pieces.append)
    assert "".join(pieces) == json.dumps(report_json(report), indent=2)
