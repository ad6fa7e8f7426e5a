"""The results store: runs, trials and grades in SQLite (the only sqlite-utils import).

A trial and its grades are written in one transaction, by the driver alone,
so a run killed at any point holds whole trials only and resumes cleanly.
Rows are read back as typed dicts (``RunRow``, ``TrialRow``, ``GradeRow``);
the file carries its format version (``PRAGMA user_version``): an older
store is brought up to date when opened (columns are only added), a newer
one is refused.
"""

from __future__ import annotations

import datetime as dt
import json
import os
import sqlite3
from pathlib import Path
from typing import Any, TypedDict, cast

import sqlite_utils

from recorder import ConfigError

DEFAULT_PATH = Path(".replay") / "results.db"
STORE_VERSION = 3
"""1: runs, trials, grades, labels; 2: each trial carries its cause and its tool use;
3: and the guards that fired in it (its limits: ``guards``, a JSON list)."""


class RunRow(TypedDict):
    """One run: its spec and pins, decoded."""

    name: str
    spec: dict[str, Any]
    pins: dict[str, Any]
    started: str
    finished: str | None


class TrialRow(TypedDict):
    """One trial: its verdict, usage, cause and tool use."""

    run: str
    case_id: str
    idx: int
    suite: str | None
    verdict: str
    score: float | None
    cassette: str | None
    steps: int | None
    input_tokens: int | None
    """None: a call reported no usage (unknown, never counted as none)."""
    output_tokens: int | None
    latency: float | None
    cost: float | None
    tags: str | None
    """The case's tags, as JSON."""
    cause: str | None
    """``agent``, ``user``, ``server``, ``harness`` or ``limit`` for an error that is not a
    grader's verdict."""
    cause_detail: list[str]
    tool_calls: int | None
    """None in trials stored before version 2 (as are the four below)."""
    selection: float | None
    arguments: float | None
    abstained: int | None
    loops: int | None
    guards: list[str]
    """The limits that fired (``timeout``, ``memory``, ``llm_tokens``, ``tool_result_chars``);
    empty in trials stored before version 3."""


class GradeRow(TypedDict):
    """One grade of one trial, evidence and meta decoded."""

    run: str
    case_id: str
    idx: int
    grader: str
    verdict: str
    score: float | None
    veto: int
    evidence: list[str]
    advisory: int
    meta: dict[str, Any]


_TRIAL_COLUMNS_2: dict[str, type] = {
    "cause": str,
    "cause_detail": str,
    "tool_calls": int,
    "selection": float,
    "arguments": float,
    "abstained": int,
    "loops": int,
}
_TRIAL_COLUMNS_3: dict[str, type] = {"guards": str}


def _now() -> str:
    return dt.datetime.now(dt.timezone.utc).isoformat(timespec="seconds")


class Store:
    """Runs, trials and grades in one SQLite file.

    Args:
        path: The database file (created with its tables if missing).
        create: Whether a missing file becomes a new store (else a ``ConfigError``).
        read_only: Open the file read-only (``replay view``): it must hold a store of
            this version, which is never changed, not even by a WAL checkpoint (SQLite
            may leave its ``-wal`` and ``-shm`` side files beside it).
    """

    def __init__(
        self, path: str | Path = DEFAULT_PATH, *, create: bool = True, read_only: bool = False
    ) -> None:
        self.path = Path(path)
        if (read_only or not create) and not self.path.exists():
            raise ConfigError(
                f"no results store at {self.path}; run `replay run` first or pass --store"
            )
        if read_only:
            self._open_read_only()
            return
        self.path.parent.mkdir(parents=True, exist_ok=True)
        try:
            # Another process (a run being resumed or read) may hold the write lock a moment.
            self.db = sqlite_utils.Database(sqlite3.connect(self.path, timeout=30))
            self.db.conn.execute("PRAGMA journal_mode = WAL")
            # Each trial is one transaction: WAL + NORMAL keeps it atomic and survives a
            # crash of the process (a power cut may lose the last trials: --resume reruns
            # them); FULL would fsync every trial (~1.4 ms of the driver's time each).
            self.db.conn.execute("PRAGMA synchronous = NORMAL")
            tables = self.db.table_names()
            version = self.db.conn.execute("PRAGMA user_version").fetchone()[0]
        except sqlite3.DatabaseError as exc:
            raise ConfigError(f"{self.path} is not a results store ({exc})") from None
        if version > STORE_VERSION:
            raise ConfigError(
                f"{self.path} was written by a newer agent-replay (store version {version}; "
                f"this one reads up to {STORE_VERSION}): upgrade agent-replay to read it"
            )
        if "runs" not in tables:
            self._create()
        elif version < STORE_VERSION:
            self._upgrade(version)
        if version < STORE_VERSION:
            self.db.conn.execute(f"PRAGMA user_version = {STORE_VERSION}")

    def _open_read_only(self) -> None:
        # A store in WAL mode needs its -shm file to be read. In a folder we may not write
        # to, SQLite cannot make one: read the file as it is then (immutable), as no
        # writer can be at work there either.
        uri = self.path.resolve().as_uri()
        queries = ["?mode=ro"]
        if not os.access(self.path.resolve().parent, os.W_OK):
            queries.append("?mode=ro&immutable=1")
        for query in queries:
            try:
                self.db = sqlite_utils.Database(sqlite3.connect(uri + query, uri=True, timeout=30))
                tables = self.db.table_names()
                version = self.db.conn.execute("PRAGMA user_version").fetchone()[0]
                break
            except sqlite3.OperationalError as exc:  # cannot open or read, not a wrong file
                failed = exc
            except sqlite3.DatabaseError as exc:
                raise ConfigError(f"{self.path} is not a results store ({exc})") from None
        else:
            raise ConfigError(f"cannot read the results store {self.path} ({failed})") from None
        if "runs" not in tables:
            self.db.conn.close()
            raise ConfigError(f"{self.path} is not a results store (it has no runs); pass --store")
        if version != STORE_VERSION:
            self.db.conn.close()
            newer = version > STORE_VERSION
            raise ConfigError(
                f"{self.path} was written by {'a newer' if newer else 'an older'} agent-replay "
                f"(store version {version}; this one reads {STORE_VERSION} read-only): "
                + (
                    "upgrade agent-replay to read it"
                    if newer
                    else f"bring it up to date with `replay runs --store {self.path}` first"
                )
            )

    def _create(self) -> None:
        self.db["runs"].create(  # type: ignore[union-attr]
            {"name": str, "spec": str, "pins": str, "started": str, "finished": str},
            pk="name",
            if_not_exists=True,
        )
        self.db["trials"].create(  # type: ignore[union-attr]
            {
                "run": str,
                "case_id": str,
                "idx": int,
                "suite": str,
                "verdict": str,
                "score": float,
                "cassette": str,
                "steps": int,
                "input_tokens": int,
                "output_tokens": int,
                "latency": float,
                "cost": float,
                "tags": str,
                **_TRIAL_COLUMNS_2,
                **_TRIAL_COLUMNS_3,
            },
            pk=("run", "case_id", "idx"),
            foreign_keys=[("run", "runs", "name")],
            if_not_exists=True,
        )
        self.db["grades"].create(  # type: ignore[union-attr]
            {
                "run": str,
                "case_id": str,
                "idx": int,
                "grader": str,
                "verdict": str,
                "score": float,
                "veto": int,
                "evidence": str,
                "advisory": int,
                "meta": str,
            },
            if_not_exists=True,
        )
        self.db["grades"].create_index(  # type: ignore[union-attr]
            ["run", "case_id", "idx"], if_not_exists=True
        )
        self._create_labels()

    def _create_labels(self) -> None:
        self.db["labels"].create(  # type: ignore[union-attr]
            {
                "run": str,
                "case_id": str,
                "idx": int,
                "dimension": str,
                "verdict": str,
                "note": str,
                "labeled": str,
            },
            pk=("run", "case_id", "idx", "dimension"),
            if_not_exists=True,
        )

    def _upgrade(self, version: int) -> None:
        """Bring a store written by an earlier version up to date.

        Columns are added (a trial stored before version 3 fired no guard); version 1's
        cause grades become trial causes, and its runs' pins gain what version 2 pins
        (see ``_pins_of_version_2``).
        """
        grades, trials = self.db["grades"], self.db["trials"]
        for column, kind in (("advisory", int), ("meta", str)):
            if column not in grades.columns_dict:
                grades.add_column(column, kind)  # type: ignore[union-attr]
        for column, added in {**_TRIAL_COLUMNS_2, **_TRIAL_COLUMNS_3}.items():
            if column not in trials.columns_dict:
                trials.add_column(column, added)  # type: ignore[union-attr]
        self._create_labels()
        if version >= 2:
            return
        with self.db.conn as conn:
            self._causes_from_grades(conn)
            self._pins_of_version_2(conn)

    @staticmethod
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

    @staticmethod
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

    def start_run(self, name: str, spec: dict[str, Any], pins: dict[str, Any]) -> None:
        """Record a new run; refuses a name already used (resume it instead)."""
        if self.run(name) is not None:
            raise ConfigError(
                f"run {name!r} exists in {self.path}: finish it with "
                f"`replay run --resume --run {name} --store {self.path}`, or name a new --run"
            )
        self.db["runs"].insert(  # type: ignore[union-attr]
            {"name": name, "spec": json.dumps(spec), "pins": json.dumps(pins), "started": _now()}
        )

    def run(self, name: str) -> RunRow | None:
        """Return a run's row (spec and pins decoded), or None."""
        rows = list(self.db["runs"].rows_where("name = ?", [name]))
        if not rows:
            return None
        row = dict(rows[0])
        row["spec"], row["pins"] = json.loads(row["spec"]), json.loads(row["pins"] or "{}")
        return cast(RunRow, row)

    def runs(self) -> list[str]:
        """Names of every run, oldest first."""
        return [r["name"] for r in self.db["runs"].rows_where(order_by="started")]

    def run_summaries(self) -> list[dict[str, Any]]:
        """Every run, oldest first: name, mode, started, finished, and its trials by verdict."""
        counts: dict[str, dict[str, int]] = {}
        for run, verdict, n in self.db.conn.execute(
            "SELECT run, verdict, COUNT(*) FROM trials GROUP BY run, verdict"
        ):
            counts.setdefault(run, {})[verdict] = n
        out = []
        for row in self.db["runs"].rows_where(order_by="started"):
            pins = json.loads(row["pins"] or "{}")
            verdicts = counts.get(row["name"], {})
            out.append(
                {
                    "name": row["name"],
                    "mode": pins.get("mode"),
                    "started": row["started"],
                    "finished": row["finished"],
                    "trials": sum(verdicts.values()),
                    "verdicts": dict(sorted(verdicts.items())),
                }
            )
        return out

    def delete_run(self, name: str) -> int:
        """Remove a run with its trials, grades and labels; returns the trials removed.

        Its cassettes stay where they are (the trials' ``cassette`` paths).

        Raises:
            ConfigError: There is no such run.
        """
        if self.run(name) is None:
            raise ConfigError(f"no run {name!r} in {self.path}")
        conn = self.db.conn
        with conn:
            removed = conn.execute("DELETE FROM trials WHERE run = ?", (name,)).rowcount
            conn.execute("DELETE FROM grades WHERE run = ?", (name,))
            conn.execute("DELETE FROM labels WHERE run = ?", (name,))
            conn.execute("DELETE FROM runs WHERE name = ?", (name,))
        return int(removed)

    def finished_trials(self, name: str) -> set[tuple[str, int]]:
        """(case id, trial index) of the trials already stored for a run."""
        return {(r["case_id"], r["idx"]) for r in self.db["trials"].rows_where("run = ?", [name])}

    def add_trial(self, name: str, trial: dict[str, Any], grades: list[dict[str, Any]]) -> None:
        """Store one trial and its grades, atomically.

        Plain SQL in one transaction: sqlite-utils' writers commit on their own.
        """
        row = {"run": name, **trial}
        for column in ("cause_detail", "guards"):  # a row as ``trials`` gives it: lists
            if not isinstance(row.get(column), str | None):
                row[column] = json.dumps(list(row[column]))
        key = (name, trial["case_id"], trial["idx"])
        conn = self.db.conn
        with conn:
            columns = ", ".join(row)
            marks = ", ".join("?" for _ in row)
            conn.execute(
                f"INSERT OR REPLACE INTO trials ({columns}) VALUES ({marks})", tuple(row.values())
            )
            conn.execute("DELETE FROM grades WHERE run = ? AND case_id = ? AND idx = ?", key)
            conn.executemany(
                "INSERT INTO grades (run, case_id, idx, grader, verdict, score, veto, evidence, "
                "advisory, meta) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
                [
                    (
                        *key,
                        g["grader"],
                        g["verdict"],
                        g.get("score"),
                        g.get("veto", 0),
                        g["evidence"],
                        g.get("advisory", 0),
                        g.get("meta"),
                    )
                    for g in grades
                ],
            )

    def finish_run(self, name: str) -> None:
        """Mark a run finished."""
        self.db["runs"].update(name, {"finished": _now()})  # type: ignore[union-attr]

    def trials(self, name: str) -> list[TrialRow]:
        """A run's trials, ordered by case and index."""
        rows = self.db["trials"].rows_where("run = ?", [name], order_by="case_id, idx")
        return [
            cast(
                TrialRow,
                {
                    **r,
                    "cause_detail": json.loads(r.get("cause_detail") or "[]"),
                    "guards": json.loads(r.get("guards") or "[]"),
                },
            )
            for r in rows
        ]

    def grades(self, name: str | None = None) -> list[GradeRow]:
        """A run's grades, or every run's (evidence and meta decoded)."""
        where, args = ("run = ?", [name]) if name is not None else (None, [])
        rows = self.db["grades"].rows_where(where, args, order_by="run, case_id, idx, rowid")
        return [
            cast(
                GradeRow,
                {
                    **r,
                    "evidence": json.loads(r["evidence"] or "[]"),
                    "meta": json.loads(r["meta"] or "{}"),
                },
            )
            for r in rows
        ]

    def add_label(
        self, name: str, case_id: str, idx: int, verdict: str, note: str = "", dimension: str = ""
    ) -> None:
        """Store a human verdict beside a trial (for one judged dimension, or ``""``: all).

        Raises:
            ConfigError: The run has no such trial.
        """
        if not any(
            self.db["trials"].rows_where(
                "run = ? AND case_id = ? AND idx = ?", [name, case_id, idx], limit=1
            )
        ):
            raise ConfigError(
                f"run {name!r} has no trial {case_id}#{idx}; see `replay report {name}`"
            )
        self.db["labels"].upsert(  # type: ignore[union-attr]
            {
                "run": name,
                "case_id": case_id,
                "idx": idx,
                "dimension": dimension,
                "verdict": verdict,
                "note": note,
                "labeled": _now(),
            },
            pk=("run", "case_id", "idx", "dimension"),
        )

    def labels(self, name: str | None = None) -> list[dict[str, Any]]:
        """A run's human labels, or every run's."""
        where, args = ("run = ?", [name]) if name is not None else (None, [])
        return list(self.db["labels"].rows_where(where, args, order_by="run, case_id, idx"))
