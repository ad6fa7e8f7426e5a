"""What crosses from the store is typed: records, enums, no row dicts, no verdict spelt out.

The store takes and gives records (``TrialRecord`` with its ``GradeRecord``s, ``RunRecord``,
``RunSummary``, ``LabelRecord``), so what reads them (results, views, the exit codes)
reads attributes and enums; how they are encoded is the store's alone. A trial attribute
is a record field and a migration line: a store made now and an old one brought up to date
hold the same columns.
"""

from __future__ import annotations

import ast
import dataclasses
import inspect
import sqlite3
import types
import typing
from collections.abc import Iterator, Mapping
from contextlib import closing
from pathlib import Path
from typing import Any, Union

from replay import GradeRecord, Store, TrialRecord, TrialUsage
from replay.graders import Cause, TrialToolUse, Verdict
from replay.modes import Guard
from replay.results import JudgeCheckRecord, LabelRecord, RunRecord, RunSummary
from tests.helpers import REPO
from tests.replay.test_store_versions import VERSION_1

DOCUMENTS = {
    (RunRecord, "spec"),
    (RunRecord, "pins"),
    (GradeRecord, "meta"),
    (JudgeCheckRecord, "result"),
}
"""Fields that hold a document of their own, which the store carries without reading: a run's
spec (``RunSpec.from_stored`` reads it), its pins, what a grader said produced its grade, and
a judge check's report as ``replay judge-check --json`` printed it."""


def _loose(kind: Any, where: str, seen: set[type]) -> Iterator[str]:
    """Where a type lets an untyped row through: a dict or mapping of str or Any, Any itself."""
    origin, args = typing.get_origin(kind), typing.get_args(kind)
    if kind is Any:
        yield f"{where}: Any"
    elif typing.is_typeddict(kind) or kind in (dict, Mapping):
        yield f"{where}: {kind}"
    elif origin in (dict, Mapping) or (isinstance(origin, type) and issubclass(origin, Mapping)):
        if not args or args[0] is str or Any in args:
            yield f"{where}: {kind}"
        for i, arg in enumerate(args):
            yield from _loose(arg, f"{where}[{i}]", seen)
    elif origin in (list, tuple, set, frozenset, Union, types.UnionType):
        for i, arg in enumerate(args):
            yield from _loose(arg, f"{where}[{i}]", seen)
    elif isinstance(kind, type) and dataclasses.is_dataclass(kind) and kind not in seen:
        seen.add(kind)
        hints = typing.get_type_hints(kind)
        for field in dataclasses.fields(kind):
            if (kind, field.name) not in DOCUMENTS:
                yield from _loose(hints[field.name], f"{kind.__name__}.{field.name}", seen)


def test_no_row_dict_crosses_from_the_store() -> None:
    loose: list[str] = []
    methods = inspect.getmembers(Store, inspect.isfunction)
    public = [(name, method) for name, method in methods if not name.startswith("_")]
    assert {"trials", "add_trial", "run", "run_summaries", "labels"} <= {n for n, _ in public}
    for name, method in public:
        hints = typing.get_type_hints(method)
        loose += _loose(hints.get("return", type(None)), f"Store.{name} returns", set())
    assert loose == [], "\n".join(loose)
    assert typing.get_type_hints(Store.add_trial)["record"] is TrialRecord
    assert typing.get_type_hints(Store.trials)["return"] == list[TrialRecord]


def test_a_record_reads_its_enums() -> None:
    hints = typing.get_type_hints(TrialRecord)
    assert hints["verdict"] is Verdict and hints["cause"] == Cause | None
    assert hints["guards"] == tuple[Guard, ...] and hints["usage"] is TrialUsage
    assert hints["tool_use"] == TrialToolUse | None
    assert hints["grades"] == tuple[GradeRecord, ...]
    assert typing.get_type_hints(GradeRecord)["verdict"] is Verdict
    assert typing.get_type_hints(LabelRecord)["verdict"] is Verdict
    assert typing.get_type_hints(RunSummary)["verdicts"] == Mapping[Verdict, int]


def test_a_record_comes_back_as_it_went_in(tmp_path: Path) -> None:
    store = Store(tmp_path / "r.db")
    store.start_run("r", {"trials": 2}, {"mode": "sandbox"})
    judge = GradeRecord(
        "judge:tone", Verdict.UNKNOWN, None, False, ("unsure",), True, {"model": "j", "n": 1}
    )
    full = TrialRecord(
        case_id="c",
        idx=3,
        suite=None,
        verdict=Verdict.ERROR,
        score=0.25,
        cassette="/x/c-3.cassette",
        usage=TrialUsage(steps=4, input_tokens=100, output_tokens=20, latency=1.5, cost=0.01),
        tags=("vip", "abstain"),
        cause=Cause.LIMIT,
        cause_detail=("ran past its deadline",),
        tool_use=TrialToolUse(calls=2, selection=0.5, arguments=None, abstained=False, loops=1),
        guards=(Guard.TIMEOUT, Guard.MEMORY),
        grades=(GradeRecord("state", Verdict.FAIL, 0.0, True, ("a", "b")), judge),
    )
    bare = TrialRecord(case_id="c", idx=0, verdict=Verdict.PASS)
    for record in (full, bare):
        store.add_trial("r", record)
    assert store.trials("r") == [bare, full]
    assert full.why_not_passed is not None and full.why_not_passed[0].value == "timeout"
    run = store.run("r")
    assert isinstance(run, RunRecord) and run.finished is None
    assert (run.name, run.spec, run.pins) == ("r", {"trials": 2}, {"mode": "sandbox"})
    (summary,) = store.run_summaries()
    assert summary.verdicts == {Verdict.ERROR: 1, Verdict.PASS: 1} and summary.mode == "sandbox"
    other = TrialRecord(case_id="d", idx=0, verdict=Verdict.FAIL)
    store.add_trial("r", other)
    assert store.trials("r", case="d") == [other] and store.trials("r", case="c") == [bare, full]
    assert store.trials("r", case="nowhere") == []


def _columns(path: Path) -> dict[str, list[str]]:
    with closing(sqlite3.connect(path)) as conn:
        return {
            table: [row[1] for row in conn.execute(f"PRAGMA table_info({table})")]
            for table in ("runs", "trials", "grades", "labels")
        }


def test_a_new_store_and_an_upgraded_one_hold_the_same_columns(tmp_path: Path) -> None:
    """A record field without its migration line would be in the new store only."""
    Store(tmp_path / "new.db")
    with closing(sqlite3.connect(tmp_path / "old.db")) as conn:
        conn.executescript(VERSION_1)
    Store(tmp_path / "old.db")
    new, old = _columns(tmp_path / "new.db"), _columns(tmp_path / "old.db")
    assert {t: sorted(c) for t, c in new.items()} == {t: sorted(c) for t, c in old.items()}


VERDICTS = frozenset(v.value for v in Verdict)


def _spelt(node: ast.AST) -> bool:
    """A verdict's name written out: ``"pass"``, or a tuple, list or set of them."""
    if isinstance(node, ast.Constant):
        return node.value in VERDICTS
    if isinstance(node, ast.Tuple | ast.List | ast.Set):
        return any(_spelt(e) for e in node.elts)
    return False


def _not_a_verdict(node: ast.Compare) -> bool:
    """Words that are not verdicts: a cassette's ``status`` (ok or error), a key looked up
    in a message (``"error" in answer``)."""
    sides = [node.left, *node.comparators]
    if any(isinstance(s, ast.Attribute) and s.attr == "status" for s in sides):
        return True
    return isinstance(node.left, ast.Constant) and all(
        isinstance(op, ast.In | ast.NotIn) for op in node.ops
    )


_TALLIES = ("verdict", "count", "total")
"""Names of what holds counts by verdict: ``counts.verdicts["pass"]``, ``totals.get("error")``
(a message's ``answer["error"]`` is not one)."""


def _tally(node: ast.AST) -> bool:
    return any(word in ast.unparse(node).lower() for word in _TALLIES)


def _read_by_name(node: ast.AST) -> bool:
    """A tally read by a verdict's name: ``counts["pass"]``, ``totals.get("error", 0)``."""
    if isinstance(node, ast.Subscript):
        return _spelt(node.slice) and _tally(node.value)
    return (
        isinstance(node, ast.Call)
        and isinstance(node.func, ast.Attribute)
        and node.func.attr == "get"
        and bool(node.args)
        and _spelt(node.args[0])
        and _tally(node.func.value)
    )


def spelt_verdicts(source: str) -> list[str]:
    """Comparisons with a verdict's name, and tallies read by one."""
    found = []
    for node in ast.walk(ast.parse(source)):
        compared = isinstance(node, ast.Compare) and not _not_a_verdict(node)
        if (compared and any(_spelt(s) for s in _sides(node))) or _read_by_name(node):
            found.append(f"{node.lineno}: {ast.unparse(node)}")  # type: ignore[attr-defined]
    return found


def _sides(node: ast.AST) -> list[ast.expr]:
    assert isinstance(node, ast.Compare)
    return [node.left, *node.comparators]


def test_no_verdict_is_compared_to_its_name_outside_parsing() -> None:
    found = [
        f"{path.relative_to(REPO)}:{line}"
        for path in sorted((REPO / "replay").rglob("*.py"))
        for line in spelt_verdicts(path.read_text())
    ]
    assert found == [], "compare with replay.graders.Verdict members:\n" + "\n".join(found)


def test_a_spelt_verdict_is_seen() -> None:
    source = """
if trial.verdict == "pass": ...
if grade.verdict in ("pass", "fail"): ...
n = counts["unsupported"] + totals.get("error", 0)
if summary.status == "error" or "error" in answer or answer["error"]: ...
"""
    assert [line.split(":")[0] for line in spelt_verdicts(source)] == ["2", "3", "4", "4"]
