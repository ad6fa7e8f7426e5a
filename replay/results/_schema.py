"""How records sit in SQLite: columns derived from the records' fields, and migrations.

The ``trials`` table holds a ``TrialRecord``'s fields, the ``grades`` table a
``GradeRecord``'s, each beside its trial's key (``run``, ``case_id``, ``idx``):
a field is a column of its name; a nested record's fields are columns of their
own names (``usage.steps`` is ``steps``; ``tool_use.calls`` is ``tool_calls``,
the name it had first); an enum is its value, a tuple a JSON list, a mapping a
JSON object (NULL when empty), a bool 0 or 1. A trial's grades are rows of
``grades``, not a column.

A store carries its version (``PRAGMA user_version``). A trial attribute is a
field of the record and a line in ``MIGRATIONS``, which adds its column to
stores of earlier versions when they are opened (and says what their trials
hold there: NULL, so the field's default). Columns are only ever added.

Tables are made and migrated inside the store's write transaction, which also sets
the version (``Store._bring_up_to_date``): nothing here commits on its own.
"""

from __future__ import annotations

import dataclasses
import enum
import functools
import json
import sqlite3
import types
import typing
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Union

from ._record import GradeRecord, TrialRecord

if TYPE_CHECKING:  # (imported by the store when it opens: it imports pandas where installed)
    import sqlite_utils

MIGRATIONS: tuple[tuple[int, str, str], ...] = (
    # (store version, table, column it adds): a store of an earlier version gains it when
    # opened, its rows NULL there (the field's default).
    (1, "grades", "advisory"),  # (some stores of version 1 lack these two)
    (1, "grades", "meta"),
    (2, "trials", "cause"),  # 2: each trial's cause and its tool use
    (2, "trials", "cause_detail"),
    (2, "trials", "tool_calls"),
    (2, "trials", "selection"),
    (2, "trials", "arguments"),
    (2, "trials", "abstained"),
    (2, "trials", "loops"),
    (3, "trials", "guards"),  # 3: the limits that fired in it
    (4, "trials", "duration"),  # 4: the seconds it took in the harness
    (5, "runs", "golden"),  # 5: golden runs, and who gave each label
    (5, "labels", "labeller"),
    (5, "trials", "expects"),  # and whether each trial's case expects act or refrain
)
"""Every column added since version 1, with the store version that added it. The store's
version (``STORE_VERSION``) is at least the last line's: a store written by a later version
is refused."""

STORE_VERSION = 8
"""1: runs, trials, grades, labels; 2: each trial carries its cause and its tool use;
3: and the guards that fired in it; 4: and the seconds it took in the harness;
5: a run may be golden (the graders' gold standard), and a label says who gave it;
6: per-case summaries kept as trials are written (``_summaries``; an older store's are
counted from its trials when it is opened); 7: each trial's row also holds its primary
failure cause, the line that says so, and its partial credit (``_facts``; worked out
from an older store's grades when it is opened); 8: each case of a finished run kept as
its report reads it (``_rows``: kept for an older store's finished runs when it is
opened)."""

KEY = ("run", "case_id", "idx")
"""A trial's key, the first columns of ``trials`` and of ``grades``."""

LABEL_KEY = ("run", "case_id", "idx", "dimension", "labeller")
"""A label's key: one label per trial, dimension and labeller (``""``: unnamed)."""

_RENAMED = {("tool_use", "calls"): "tool_calls"}
"""Columns not named after their field: the names they had before there were records."""

_NOT_COLUMNS = frozenset({"grades"})
"""Fields of a record held elsewhere: a trial's grades are rows of ``grades``."""

_NULL_WHEN_EMPTY = frozenset({"cause_detail"})
"""Lists stored NULL when empty, as they were before records (a trial without a cause)."""


@dataclass(frozen=True, slots=True)
class _Field:
    name: str
    column: str
    """Its column; a nested record's is the name of the field (its fields are columns)."""
    encode: Callable[[Any], Any]
    """A value (never None) to the column's."""
    decode: Callable[[Any], Any]
    """A column's value (never NULL) to the field's."""
    default: Any
    """What NULL reads as: the field's default (a store of a version before its column)."""
    required: bool
    """Whether the field is never None: a nested record missing one is None."""
    nested: Layout | None = None


def _unwrap(kind: Any) -> tuple[Any, bool]:
    """A field's type without its ``| None``, and whether it had one."""
    if typing.get_origin(kind) in (Union, types.UnionType):
        args = [a for a in typing.get_args(kind) if a is not type(None)]
        return (args[0] if len(args) == 1 else kind), len(args) < len(typing.get_args(kind))
    return kind, False


def _sql(kind: Any) -> type:
    """The column type sqlite-utils creates for a field of this type."""
    return int if kind in (int, bool) else float if kind is float else str


def _codec(kind: Any, null_when_empty: bool) -> tuple[Callable[[Any], Any], Callable[[Any], Any]]:
    """How a field's value of this type becomes a column's value, and back."""
    origin = typing.get_origin(kind)
    if origin is tuple:
        item = typing.get_args(kind)[0]
        parse = _enum(item) if _is_enum(item) else _same
        return (
            lambda value: (
                None
                if null_when_empty and not value
                else json.dumps([getattr(x, "value", x) for x in value])
            ),
            # A run repeats its tags, details and evidence trial after trial: each text is
            # parsed once (the tuple is immutable, so trials may share it).
            functools.lru_cache(maxsize=4096)(lambda raw: tuple(parse(x) for x in json.loads(raw))),
        )
    if origin in (Mapping, dict):
        # Parsed once per text as tuples are; each record gets its own (shallow) copy.
        parsed = functools.lru_cache(maxsize=4096)(json.loads)
        return (lambda value: json.dumps(dict(value)) if value else None), lambda raw: dict(
            parsed(raw)
        )
    if _is_enum(kind):
        return (lambda value: value.value), _enum(kind)
    if kind is bool:
        return int, bool
    return _same, _same


def _enum(kind: type[enum.Enum]) -> Callable[[Any], Any]:
    """An enum's member by value, looked up (calling the class is ~10x slower).

    A value it does not have gets the class's own error.
    """
    members = {member.value: member for member in kind}

    def member(raw: Any) -> Any:
        found = members.get(raw)
        return found if found is not None else kind(raw)

    return member


def _is_enum(kind: Any) -> bool:
    return isinstance(kind, type) and issubclass(kind, enum.Enum)


def _same(value: Any) -> Any:
    return value


def _default(spec: dataclasses.Field[Any]) -> Any:
    if spec.default is not dataclasses.MISSING:
        return spec.default
    if spec.default_factory is not dataclasses.MISSING:
        return spec.default_factory()
    return None


class Layout:
    """A record type laid out as columns, in the order of its fields."""

    def __init__(self, record: type, prefix: str = "") -> None:
        self.record = record
        hints = typing.get_type_hints(record)
        self.fields: list[_Field] = []
        self.columns: dict[str, type] = {}
        """Each column with the type it is created with, in order."""
        for spec in dataclasses.fields(record):
            if spec.name in _NOT_COLUMNS:
                continue
            kind, optional = _unwrap(hints[spec.name])
            default, required = _default(spec), not optional
            if isinstance(kind, type) and dataclasses.is_dataclass(kind):
                inner = Layout(kind, spec.name)
                self.fields.append(
                    _Field(spec.name, spec.name, _same, _same, default, required, inner)
                )
                self.columns.update(inner.columns)
                continue
            column = _RENAMED.get((prefix, spec.name), spec.name)
            encode, decode = _codec(kind, column in _NULL_WHEN_EMPTY)
            self.fields.append(_Field(spec.name, column, encode, decode, default, required))
            self.columns[column] = _sql(kind)

    def encode(self, record: Any) -> list[Any]:
        """The record's column values, in ``columns`` order (a None nested record: NULLs)."""
        out: list[Any] = []
        for f in self.fields:
            value = getattr(record, f.name) if record is not None else None
            if f.nested is not None:
                out += f.nested.encode(value)
            else:
                out.append(None if value is None else f.encode(value))
        return out

    def decode(self, row: Mapping[str, Any], **rest: Any) -> Any:
        """The record of a row (its columns by name); ``rest``: fields that are not columns."""
        values: dict[str, Any] = {}
        for f in self.fields:
            if f.nested is not None:
                values[f.name] = f.nested.decode(row) if f.nested.complete(row) else f.default
            else:
                raw = row[f.column]
                values[f.name] = f.default if raw is None else f.decode(raw)
        return self.record(**values, **rest)

    def reader(self, columns: Sequence[str]) -> Callable[..., Any]:
        """``decode`` for rows as a query gives them: values in ``columns`` order.

        (Read by position, each field's place worked out once: the store reads a run's
        100,000 trials this way.)
        """
        at = {column: i for i, column in enumerate(columns)}
        plan: list[tuple[str, int, Callable[[Any], Any] | None, Any, tuple[int, ...]]] = []
        for f in self.fields:
            if f.nested is not None:
                plan.append((f.name, -1, f.nested.reader(columns), f.default, f.nested._needs(at)))
            else:
                decode = None if f.decode is _same else f.decode
                plan.append((f.name, at[f.column], decode, f.default, ()))
        record = self.record

        def read(row: Sequence[Any], **rest: Any) -> Any:
            values: dict[str, Any] = {}
            for name, i, decode, default, needs in plan:
                if i < 0:
                    whole = all(row[j] is not None for j in needs)
                    values[name] = decode(row) if whole and decode is not None else default
                    continue
                raw = row[i]
                values[name] = default if raw is None else raw if decode is None else decode(raw)
            return record(**values, **rest)

        return read

    def _needs(self, at: Mapping[str, int]) -> tuple[int, ...]:
        """The places of the columns that must hold a value for ``complete``."""
        out: list[int] = []
        for f in self.fields:
            if f.required:
                out += f.nested._needs(at) if f.nested is not None else [at[f.column]]
        return tuple(out)

    def complete(self, row: Mapping[str, Any]) -> bool:
        """Whether every required field's column holds a value (else the record is None)."""
        return all(
            f.nested.complete(row) if f.nested is not None else row[f.column] is not None
            for f in self.fields
            if f.required
        )


TRIALS = Layout(TrialRecord)
"""A trial's columns, after its key."""
GRADES = Layout(GradeRecord)
"""A grade's columns, after its trial's key."""


def create_tables(db: sqlite_utils.Database) -> None:
    """Make a new store's tables (in the caller's transaction)."""
    db["runs"].create(  # type: ignore[union-attr]
        {"name": str, "spec": str, "pins": str, "started": str, "finished": str, "golden": int},
        pk="name",
        if_not_exists=True,
    )
    key = {"run": str, "case_id": str, "idx": int}
    db["trials"].create(  # type: ignore[union-attr]
        {**key, **TRIALS.columns},
        pk=KEY,
        foreign_keys=[("run", "runs", "name")],
        if_not_exists=True,
    )
    db["grades"].create({**key, **GRADES.columns}, if_not_exists=True)  # type: ignore[union-attr]
    db["grades"].create_index(list(KEY), if_not_exists=True)  # type: ignore[union-attr]
    _create_labels(db)
    create_judge_checks(db)


def _create_labels(db: sqlite_utils.Database) -> None:
    db["labels"].create(  # type: ignore[union-attr]
        {
            "run": str,
            "case_id": str,
            "idx": int,
            "dimension": str,
            "verdict": str,
            "note": str,
            "labeled": str,
            "labeller": str,
        },
        pk=LABEL_KEY,
        if_not_exists=True,
    )


JUDGE_CHECK_KEY = ("model", "rubric_hash")
"""A judge check's key: the latest ``replay judge-check`` of a judge model and rubric hash."""


def create_judge_checks(db: sqlite_utils.Database) -> None:
    """The ``judge_checks`` table: each judge's latest bias probes (``replay judge-check``)."""
    db["judge_checks"].create(  # type: ignore[union-attr]
        {
            "model": str,
            "rubric_hash": str,
            "checked": str,
            "passed": int,
            "reason": str,
            "runs": str,
            "result": str,
        },
        pk=JUDGE_CHECK_KEY,
        if_not_exists=True,
    )


def upgrade(db: sqlite_utils.Database, version: int) -> None:
    """Bring a store written by an earlier version up to date (in the caller's transaction).

    The columns ``MIGRATIONS`` names are added where missing (a trial stored before
    version 3 fired no guard; a label before version 5 is nobody's, ``""``, and its
    key gains the labeller); version 1's cause grades become trial causes, and its
    runs' pins gain what version 2 pins (see ``_pins_of_version_2``).
    The ``judge_checks`` table (version 5) is made where missing, empty.
    """
    layouts: dict[str, Mapping[str, type]] = {
        "trials": TRIALS.columns,
        "grades": GRADES.columns,
        "runs": {"golden": int},
        "labels": {"labeller": str},
    }
    _create_labels(db)
    create_judge_checks(db)
    for _, name, column in MIGRATIONS:
        table = db[name]
        if column not in table.columns_dict:
            table.add_column(column, layouts[name][column])  # type: ignore[union-attr]
    if db["labels"].pks != list(LABEL_KEY):  # type: ignore[union-attr]
        # Version 5 keys a label by its labeller too; the labels before it were nobody's.
        db.conn.execute("UPDATE labels SET labeller = '' WHERE labeller IS NULL")
        db["labels"].transform(pk=LABEL_KEY)  # type: ignore[union-attr]
    if version < 2:
        _causes_from_grades(db.conn)
        _pins_of_version_2(db.conn)


def _causes_from_grades(conn: sqlite3.Connection) -> None:
    """Version 1 kept an error's cause as a grade named agent, user or harness."""
    rows = conn.execute(
        "SELECT rowid, run, case_id, idx, grader, evidence FROM grades "
        "WHERE grader IN ('agent', 'user', 'harness')"
    ).fetchall()
    for rowid, run, case_id, idx, cause, evidence in rows:
        conn.execute(
            "UPDATE trials SET cause = ?, cause_detail = ? "
            "WHERE run = ? AND case_id = ? AND idx = ?",
            (cause, evidence or "[]", run, case_id, idx),
        )
        conn.execute("DELETE FROM grades WHERE rowid = ?", (rowid,))


def _pins_of_version_2(conn: sqlite3.Connection) -> None:
    """What version 1's runs were graded by, pinned as version 2 pins it.

    Every trial then got the built-in graders, each at version 1; a run whose
    mode calls no LLM pins no LLM source (version 1 said ``live``). So a
    baseline stored by version 1 can be gated against a new run.
    """
    from ..graders import BUILT_IN
    from ..modes import REGISTRY

    for name, text in conn.execute("SELECT name, pins FROM runs").fetchall():
        pins = json.loads(text or "{}")
        pins.setdefault("graders", {grader: {"version": "1"} for grader in BUILT_IN})
        mode = REGISTRY.get(pins.get("mode") or "")
        if mode is not None and not mode.llm:
            pins["llm"] = None
        conn.execute("UPDATE runs SET pins = ? WHERE name = ?", (json.dumps(pins), name))


def read_trials(
    conn: sqlite3.Connection, run: str, case: str | None = None, idx: int | None = None
) -> list[TrialRecord]:
    """The trials of a run, of one case of it, or one trial, by case and index."""
    graded = list(GRADES.columns)
    only = ""
    given: tuple[object, ...] = (run,)
    if case is not None:
        only, given = "AND case_id = ? ", (run, case)
        if idx is not None:
            only, given = "AND case_id = ? AND idx = ? ", (run, case, idx)
    grades: dict[tuple[str, int], list[GradeRecord]] = {}
    for row in conn.execute(
        f"SELECT {', '.join(graded)}, case_id, idx FROM grades WHERE run = ? {only}"
        "ORDER BY case_id, idx, rowid",
        given,
    ):
        grades.setdefault(row[-2:], []).append(_GRADE(row))
    rows = conn.execute(
        f"SELECT {', '.join(TRIALS.columns)} FROM trials WHERE run = ? {only}ORDER BY case_id, idx",
        given,
    )
    key = (_TRIAL_KEY.index("case_id"), _TRIAL_KEY.index("idx"))
    return [_TRIAL(row, grades=tuple(grades.get((row[key[0]], row[key[1]]), ()))) for row in rows]


_TRIAL_KEY = list(TRIALS.columns)
_TRIAL = TRIALS.reader(_TRIAL_KEY)
_GRADE = GRADES.reader(list(GRADES.columns))
