"""Case files: one instruction, a starting world, and what success means (YAML).

```yaml
id: refund-4812
suite: regression            # or capability
expects: act                 # or refrain (refuse, call no tool); unset: undeclared
instruction: Refund order 4812 and notify the customer.
fixture: ../fixture.sql      # .sql script, .json dict-of-tables or .db; relative to this file
allowed_tables: [orders, refunds, ledger, emails]
forbidden_tools: [delete_customer]
must_call: [issue_refund]
max_steps: 12
max_cost: 0.50
assert:
  - refunds.count(order_id=4812) == 1
  - no_side_effects
scoring: all_pass            # or weighted, hybrid
reference_solution:
  - {tool: issue_refund, args: {order_id: 4812, amount: 35.0, reason: customer request}}
match_reference:             # grader: the world must end as the reference solution leaves it
  multisets: [refunds.tags]  # lists compared in any order (table.field)
faults:                      # injected in offline and sandbox trials, seeded (--fault-seed)
  - {kind: duplicate, tool: issue_refund, rate: 1.0}
user:                        # multi-turn: a simulated user (an LLM) with a hidden instruction
  instruction: You are Mia Li; you want order 4812 refunded. Give the number when asked.
rubric:                      # judged by an LLM (replay run --judge-url), one call per dimension
  - {name: tone, criteria: The answer is polite and says how much was refunded.}
tags: [refunds, critical]
```
"""

from __future__ import annotations

import difflib
import enum
import functools
import sqlite3
from pathlib import Path
from typing import Any

import yaml
from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator
from pydantic_core import PydanticCustomError

from recorder import ConfigError, FixtureError, ReplayError, VolatileFields

from ..graders import (
    Assertion,
    AssertionSyntaxError,
    Dimension,
    GraderUse,
    MatchReference,
    SqliteWorld,
    WorldRef,
)
from ..surroundings import Fault, UserSpec
from ..worlds import Fixture, load_fixture
from ._kinds import Expects, Suite
from ._names import name_problem
from ._yaml import CaseTooLarge, load_yaml, read_bounded

FIXTURE_SUFFIXES = (".sql", ".json", ".db", ".sqlite", ".sqlite3")


class CaseFileError(ReplayError, ValueError):
    """A case file cannot be loaded.

    Attributes:
        path: The case file.
        field: Dotted path of the offending field, if one is to blame.
    """

    def __init__(self, message: str, *, path: str | Path, field: str | None = None) -> None:
        self.path = Path(path)
        self.field = field
        where = f" (field {field})" if field else ""
        super().__init__(f"{self.path}{where}: {message}")


class Scoring(str, enum.Enum):
    """How a case's grades combine into its verdict."""

    ALL_PASS = "all_pass"
    WEIGHTED = "weighted"
    HYBRID = "hybrid"


class ToolCallSpec(BaseModel):
    """One call of a reference solution."""

    model_config = ConfigDict(extra="forbid", frozen=True, use_attribute_docstrings=True)

    tool: str
    """Tool name."""
    args: dict[str, Any] = Field(default_factory=dict)
    """Arguments by parameter name."""


class GraderEntry(BaseModel):
    """A grader named with arguments: ``{name: polite, args: {word: please}}``."""

    model_config = ConfigDict(extra="forbid", frozen=True, use_attribute_docstrings=True)

    name: str = Field(min_length=1)
    """Registered name (``MODULE:NAME`` imports the module that registers it)."""
    args: dict[str, Any] = Field(default_factory=dict)
    """Keyword arguments: the grader is called ``grader(trial, **args)``."""


class RubricDimension(BaseModel):
    """One dimension an LLM judge grades (semantics only: the state is the state grader's)."""

    model_config = ConfigDict(extra="forbid", frozen=True, use_attribute_docstrings=True)

    name: str = Field(min_length=1, pattern=r"^[\w.-]+$")
    """Short name (letters, digits, ``_.-``); grades are named ``judge:<name>``."""
    criteria: str = Field(min_length=1)
    """What the judge checks, in plain words."""


class Case(BaseModel):
    """A case as written in its file, paths resolved against the file."""

    model_config = ConfigDict(
        extra="forbid", frozen=True, use_attribute_docstrings=True, populate_by_name=True
    )

    id: str
    """Unique id of the case, a name (``replay.cases.check_name``): its cassettes are named so."""
    suite: Suite = Suite.CAPABILITY
    expects: Expects | None = None
    """Whether the agent must act or refrain (see ``Expects``); None: undeclared."""
    instruction: str = Field(min_length=1)
    """What the agent is asked to do."""
    fixture: Path
    """The starting world: a .sql script, a JSON dict-of-tables or a .db file."""
    allowed_tables: list[str] | None = None
    """Tables the agent may change (``[]``: none); unset, ``no_side_effects`` cannot be checked."""
    forbidden_tools: list[str] = Field(default_factory=list)
    must_call: list[str] = Field(default_factory=list)
    max_steps: int | None = Field(default=None, gt=0)
    max_cost: float | None = Field(default=None, ge=0)
    assertions: list[str] = Field(default_factory=list, alias="assert")
    """State assertions (see replay.graders.Assertion)."""
    scoring: Scoring = Scoring.ALL_PASS
    """How the grades combine: ``all_pass``; ``weighted`` or ``hybrid`` give partial
    credit, and then the state grade records which assertions held (its ``meta``)."""
    reference_solution: list[ToolCallSpec] = Field(default_factory=list)
    """Tool calls that solve the case; `replay check-cases` runs them through the graders."""
    reference_answer: str | None = None
    """The final answer that goes with the reference solution."""
    rubric: list[RubricDimension] = Field(default_factory=list)
    """Dimensions an LLM judge grades, one call each."""
    faults: list[Fault] = Field(default_factory=list)
    """Faults injected in offline and sandbox trials (see replay.surroundings._faults)."""
    graders: list[GraderEntry] = Field(default_factory=list)
    """Graders to run besides the built-in ones, by registered name (``MODULE:NAME``
    imports the module that registers it), or as ``{name: ..., args: {...}}``."""
    match_reference: MatchReference | None = None
    """Grade with ``matches_reference``: the world must end as the reference solution
    leaves it (``multisets``: list fields compared in any order; ``tolerance``)."""
    user: UserSpec | None = None
    """A simulated user (multi-turn): its opening message, not ``instruction``, starts the
    trial; ``instruction`` then describes the task for readers and judges."""
    ignore_fields: list[str] = Field(default_factory=list)
    """Fields of the agent's HTTP requests that change on every run, left out when a request
    is matched to its recording (offline, a frozen LLM): a JSON body path
    (``metadata.user_id``, ``messages.*.id``), ``query:NAME``, ``header:NAME`` or a preset
    (``@claude-code``; see ``recorder.Playback``)."""
    tags: list[str] = Field(default_factory=list)
    path: Path | None = None
    """The file the case was loaded from."""

    @field_validator("id")
    @classmethod
    def _a_name(cls, value: str) -> str:
        problem = name_problem(value)
        if problem is not None:  # (not a ValueError: pydantic would prefix "Value error, ")
            raise PydanticCustomError("name", "{problem}", {"problem": problem})
        return value

    @field_validator("ignore_fields")
    @classmethod
    def _fields(cls, value: list[str]) -> list[str]:
        try:
            VolatileFields(tuple(value))
        except ConfigError as exc:  # (as the case's error: its file and field named)
            raise PydanticCustomError("field", "{problem}", {"problem": str(exc)}) from None
        return value

    @field_validator("fixture")
    @classmethod
    def _fixture_kind(cls, value: Path) -> Path:
        if value.suffix.lower() not in FIXTURE_SUFFIXES:
            raise ValueError(f"must end in one of {', '.join(FIXTURE_SUFFIXES)}")
        return value

    @field_validator("rubric")
    @classmethod
    def _unique_dimensions(cls, value: list[RubricDimension]) -> list[RubricDimension]:
        names = [d.name for d in value]
        if len(set(names)) != len(names):
            raise ValueError(f"dimension names must be unique (got {', '.join(names)})")
        return value

    @property
    def grader_uses(self) -> list[GraderUse]:
        """The case's own graders, as ``replay.graders.resolve`` takes them."""
        return [GraderUse(g.name, g.args) for g in self.graders]

    @field_validator("graders", mode="before")
    @classmethod
    def _named(cls, value: Any) -> Any:
        """A plain name is a grader without arguments."""
        if isinstance(value, list):
            return [{"name": g} if isinstance(g, str) else g for g in value]
        return value

    def dimensions(self) -> list[Dimension]:
        """The rubric, as the judge takes it."""
        return [Dimension(d.name, d.criteria) for d in self.rubric]

    def parsed_assertions(self) -> list[Assertion]:
        """Return the assertions, parsed (they were checked when the case was loaded)."""
        return [_parsed(a) for a in self.assertions]

    def schema_problems(self, fixture: Fixture | None = None) -> list[str]:
        """What the case names that its fixture's schema lacks, one line each (``load_case``).

        Checked without running anything: every table an assertion names
        (``itemz[1]``, ``diff.itemz.inserted``), the columns it filters on,
        aggregates or reads off a row (SQL tables only: a document
        collection's records may gain fields), the number of values a
        ``table[key]`` lookup gives for the primary key; the tables of
        ``allowed_tables`` and of ``match_reference.multisets`` (and, for
        SQL tables, the multiset's column). A typo there is the case's
        error, not the agent's failure.

        Args:
            fixture: The case's fixture, if loaded already (default: ``self.fixture``).
        """
        fixture = fixture or load_fixture(Path(self.fixture).resolve())
        world = fixture.open()
        try:
            return _schema_problems(self, _Schema(fixture, world.conn))
        finally:
            world.close()


def _schema_problems(case: Case, schema: _Schema) -> list[str]:
    problems = []
    for index, source in enumerate(case.assertions, 1):
        for ref in _parsed(source).world_refs():
            problems += schema.problems(f"assertion {index}", ref)
    for table in case.allowed_tables or []:
        problems += schema.problems("allowed_tables", WorldRef(table))
    for path in case.match_reference.multisets if case.match_reference else []:
        table, _, rest = path.partition(".")
        column = rest.split(".")[0] or None
        problems += schema.problems("match_reference.multisets", WorldRef(table, column))
    return list(dict.fromkeys(problems))


class _Schema:
    """A fixture's tables, columns and primary keys, read once from a world of it."""

    SHOWN = 20
    """Names listed in a message at most."""

    def __init__(self, fixture: Fixture, conn: sqlite3.Connection) -> None:
        self.collections = fixture.collections
        self._conn = conn
        self.tables = sorted(
            r[0]
            for r in self._conn.execute(
                "SELECT name FROM sqlite_master WHERE type IN ('table', 'view') "
                "AND name NOT LIKE 'sqlite\\_%' ESCAPE '\\'"
            )
        )
        self._columns: dict[str, tuple[list[str], list[str]]] = {}

    def columns(self, table: str) -> tuple[list[str], list[str]]:
        """The table's columns and its primary key (``rowid`` when it declares none)."""
        if table not in self._columns:
            quoted = '"' + table.replace('"', '""') + '"'
            info = self._conn.execute(f"PRAGMA table_info({quoted})").fetchall()
            pk = [r[1] for r in sorted(info, key=lambda r: r[5]) if r[5]] or ["rowid"]
            self._columns[table] = ([r[1] for r in info], pk)
        return self._columns[table]

    @classmethod
    def _listed(cls, names: list[str]) -> str:
        shown = ", ".join(names[: cls.SHOWN])
        return shown + (f", ... ({len(names)} in all)" if len(names) > cls.SHOWN else "")

    def problems(self, where: str, ref: WorldRef) -> list[str]:
        if ref.table not in self.tables:
            return [
                f"{where} names table {ref.table!r}, but the fixture has no such table "
                f"(its tables: {self._listed(self.tables)})"
            ]
        columns, pk = self.columns(ref.table)
        if ref.key_parts is not None and ref.key_parts != len(pk):
            return [
                f"{where} looks up {ref.table}[...] by {ref.key_parts} value(s), but the "
                f"fixture keys {ref.table!r} by {len(pk)} ({', '.join(pk)})"
            ]
        if ref.column is None or ref.table in self.collections:
            return []
        if ref.column in columns or (ref.filter and ref.column == "rowid"):
            return []
        return [
            f"{where} names column {ref.column!r} of table {ref.table!r}, but the fixture's "
            f"{ref.table} has no such column (its columns: {self._listed(columns)})"
        ]


@functools.lru_cache(maxsize=4096)
def _parsed(source: str) -> Assertion:
    """An assertion parsed once per process: every trial of a case checks the same ones."""
    return Assertion(source)


def load_case(path: str | Path) -> Case:
    """Load and validate one case file.

    Raises:
        CaseFileError: Naming the file and the field, for anything malformed:
            a file over ``MAX_CASE_BYTES`` (refused unparsed), YAML syntax, a
            missing or mistyped field, an id that is not a name (``check_name``),
            a fixture that does not exist, an assertion that does not parse.
    """
    path = Path(path)
    try:
        data = load_yaml(read_bounded(path))
    except FileNotFoundError:
        raise CaseFileError("no such case file", path=path) from None
    except CaseTooLarge as exc:
        raise CaseFileError(str(exc), path=path) from None
    except (OSError, UnicodeDecodeError) as exc:
        raise CaseFileError(f"cannot read it ({exc})", path=path) from None
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        where = f" at line {mark.line + 1}, column {mark.column + 1}" if mark else ""
        problem = getattr(exc, "problem", None) or "invalid YAML"
        raise CaseFileError(f"{problem}{where}", path=path) from None
    if not isinstance(data, dict):
        raise CaseFileError(
            "must be a mapping of fields (id, instruction, fixture, ...)", path=path
        )
    try:
        case = Case.model_validate({**data, "path": path})
    except ValidationError as exc:
        err = exc.errors()[0]
        field = ".".join(str(p) for p in err["loc"])
        message = err["msg"]
        if err["type"] == "extra_forbidden" and len(err["loc"]) == 1:  # a top-level key
            known = [f.alias or name for name, f in Case.model_fields.items() if name != "path"]
            near = difflib.get_close_matches(str(err["loc"][0]), known, n=1)
            hint = f"did you mean {near[0]!r}? " if near else ""
            message = f"not a case field; {hint}the fields: {', '.join(sorted(known))}"
        raise CaseFileError(message, path=path, field=field) from None
    fixture = case.fixture if case.fixture.is_absolute() else path.parent / case.fixture
    if not fixture.exists():
        raise CaseFileError(f"fixture {fixture} does not exist", path=path, field="fixture")
    parsed = []
    for index, source in enumerate(case.assertions):
        try:
            parsed.append(_parsed(source))  # parsed once per process, for every trial too
        except AssertionSyntaxError as exc:
            raise CaseFileError(str(exc), path=path, field=f"assert.{index}") from None
    case = case.model_copy(update={"fixture": fixture.resolve()})
    if not (case.assertions or case.allowed_tables or case.match_reference):
        return case
    try:
        loaded = load_fixture(case.fixture)
    except FixtureError as exc:
        raise CaseFileError(str(exc), path=path, field="fixture") from None
    world = loaded.open()
    try:
        problems = _schema_problems(case, _Schema(loaded, world.conn))
        if problems:  # a typo in the case: its error, never a failure of every agent's trials
            raise CaseFileError("; ".join(problems), path=path)
        for index, assertion in enumerate(parsed):
            try:
                assertion.validate(SqliteWorld(world.conn))
            except AssertionSyntaxError as exc:
                raise CaseFileError(str(exc), path=path, field=f"assert.{index}") from None
    finally:
        world.close()
    return case
