"""The results store: runs, trials and grades in SQLite (sqlite-utils here and in ``_schema``).

A trial and its grades are written in one transaction, by the driver alone,
so a run killed at any point holds whole trials only and resumes cleanly.
What goes in and comes out are records (``TrialRecord`` with its
``GradeRecord``s, ``RunRecord``, ``RunSummary``, ``LabelRecord``); how they
are encoded is ``_schema``'s. The file carries its format version (``PRAGMA
user_version``): an older store is brought up to date when opened (columns
are only added), a newer one is refused. Any number of processes may write one
store at once: every write holds the write lock from its start (``_sqlite``).
"""

from __future__ import annotations

import datetime as dt
import json
import os
import sqlite3
from collections.abc import Mapping, Sequence
from contextlib import AbstractContextManager
from pathlib import Path
from typing import Any

from recorder import ConfigError

from ..graders import Verdict
from . import _facts as facts
from . import _rows as case_rows
from . import _summaries as summaries
from ._record import JudgeCheckRecord, LabelRecord, RunRecord, RunSummary, TrialRecord
from ._schema import (
    GRADES,
    JUDGE_CHECK_KEY,
    KEY,
    LABEL_KEY,
    STORE_VERSION,
    TRIALS,
    create_judge_checks,
    create_tables,
    read_trials,
    upgrade,
)
from ._sqlite import BUSY_SECONDS, Database, connect, is_busy, locked, snapshot, transaction

DEFAULT_PATH = Path(".replay") / "results.db"


LABEL_VERDICTS = {
    "pass": Verdict.PASS,
    "fail": Verdict.FAIL,
    "unknown": Verdict.UNKNOWN,
    "unsure": Verdict.UNKNOWN,
}
"""What a label may say: pass, fail, or that the labeller was unsure (``unknown``)."""


def _now() -> str:
    return dt.datetime.now(dt.timezone.utc).isoformat(timespec="seconds")


class Store:
    """Runs, trials and grades in one SQLite file.

    A run's trials come back as ``TrialRecord``s, each with its grades::

        for trial in Store().trials("nightly"):
            if not trial.passed:
                print(trial.case_id, trial.idx, trial.verdict.value, trial.why_not_passed)

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
            self.db = Database(connect(self.path))
            made, version = self._version()
        except sqlite3.DatabaseError as exc:
            if is_busy(exc):
                raise locked(self.path) from None
            raise ConfigError(f"{self.path} is not a results store ({exc})") from None
        if not made or version < STORE_VERSION:
            self._bring_up_to_date()
        elif version > STORE_VERSION:
            raise self._newer(version)

    def _version(self) -> tuple[bool, int]:
        """Whether the store's tables are made, and its version."""
        made = "runs" in self.db.table_names()
        return made, self.db.conn.execute("PRAGMA user_version").fetchone()[0]

    def _newer(self, version: int) -> ConfigError:
        return ConfigError(
            f"{self.path} was written by a newer agent-replay (store version {version}; "
            f"this one reads up to {STORE_VERSION}): upgrade agent-replay to read it"
        )

    def _bring_up_to_date(self) -> None:
        """Make a new store's tables, or bring an older store's up to date: once.

        Processes that open one store at once may all find it new (or old). The first to
        take the write lock makes (or migrates) the tables and sets the version in one
        transaction; each after it reads the version again under the lock: nothing to do.
        """
        with self._write():
            made, version = self._version()
            if version > STORE_VERSION:
                raise self._newer(version)
            if not made:
                create_tables(self.db.utils)
            elif version < STORE_VERSION:
                upgrade(self.db.utils, version)
            if not made or version < STORE_VERSION:
                summaries.create(self.db.conn)
                facts.create(self.db.conn)
                case_rows.create(self.db.conn)
                if made and version < 6:
                    summaries.recount_all(self.db.conn, read_trials)
                if made and version < 7:
                    facts.fill(self.db.conn, read_trials)
                if made:
                    case_rows.keep_finished(self.db.conn)
                self.db.conn.execute(f"PRAGMA user_version = {STORE_VERSION}")

    def _write(self) -> AbstractContextManager[sqlite3.Connection]:
        """A write transaction that holds the store's write lock from its start."""
        return transaction(self.db.conn, self.path)

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
                conn = sqlite3.connect(uri + query, uri=True, timeout=BUSY_SECONDS)
                self.db = Database(conn)
                tables = self.db.table_names()
                version = self.db.conn.execute("PRAGMA user_version").fetchone()[0]
                break
            except sqlite3.OperationalError as exc:  # cannot open or read, not a wrong file
                if is_busy(exc):
                    raise locked(self.path) from None
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

    def start_run(self, name: str, spec: dict[str, Any], pins: dict[str, Any]) -> None:
        """Record a new run; refuses a name already used (resume it instead)."""
        with self._write():  # (two processes given one name: the second is refused)
            if self.run(name) is not None:
                raise ConfigError(
                    f"run {name!r} exists in {self.path}: finish it with "
                    f"`replay run --resume --run {name} --store {self.path}`, or name a new --run"
                )
            row = {"name": name, "spec": json.dumps(spec), "pins": json.dumps(pins)}
            self.db["runs"].insert({**row, "started": _now()})  # type: ignore[union-attr]

    def run(self, name: str) -> RunRecord | None:
        """Return a run (its spec and pins decoded), or None."""
        row = self.db.conn.execute(
            "SELECT name, spec, pins, started, finished, golden FROM runs WHERE name = ?", (name,)
        ).fetchone()
        if row is None:
            return None
        name, spec, pins, started, finished, golden = row
        return RunRecord(
            name, json.loads(spec), json.loads(pins or "{}"), started, finished, bool(golden)
        )

    def set_golden(self, name: str, golden: bool = True) -> None:
        """Mark a run as part of the graders' gold standard (or, False, no longer).

        Raises:
            ConfigError: There is no such run.
        """
        with self._write() as conn:
            if self.run(name) is None:
                raise ConfigError(f"no run {name!r} in {self.path}; see `replay runs`")
            conn.execute("UPDATE runs SET golden = ? WHERE name = ?", (int(golden), name))

    def golden_runs(self) -> list[str]:
        """Names of the golden runs, oldest first."""
        rows = self.db.conn.execute("SELECT name FROM runs WHERE golden ORDER BY started")
        return [name for (name,) in rows]

    def runs(self) -> list[str]:
        """Names of every run, oldest first."""
        return [name for (name,) in self.db.conn.execute("SELECT name FROM runs ORDER BY started")]

    def run_summaries(self) -> list[RunSummary]:
        """Every run, oldest first: its mode, when, and its trials by verdict."""
        counts: dict[str, dict[Verdict, int]] = {}
        for run, verdict, n in self.db.conn.execute(  # (the summaries: no trial is read)
            "SELECT run, key, SUM(n) FROM case_summaries WHERE kind = 'verdict' AND n > 0 "
            "GROUP BY run, key"
        ):
            counts.setdefault(run, {})[Verdict(verdict)] = n
        out = []
        for name, text, started, finished in self.db.conn.execute(
            "SELECT name, pins, started, finished FROM runs ORDER BY started"
        ):
            pins = json.loads(text or "{}")
            verdicts = counts.get(name, {})
            out.append(
                RunSummary(
                    name,
                    pins.get("mode"),
                    started,
                    finished,
                    sum(verdicts.values()),
                    dict(sorted(verdicts.items())),
                )
            )
        return out

    def delete_run(self, name: str) -> int:
        """Remove a run with its trials, grades and labels; returns the trials removed.

        Its cassettes stay where they are (the trials' ``cassette`` paths).

        Raises:
            ConfigError: There is no such run.
        """
        with self._write() as conn:
            if self.run(name) is None:
                raise ConfigError(f"no run {name!r} in {self.path}")
            removed = conn.execute("DELETE FROM trials WHERE run = ?", (name,)).rowcount
            conn.execute("DELETE FROM grades WHERE run = ?", (name,))
            conn.execute("DELETE FROM labels WHERE run = ?", (name,))
            conn.execute("DELETE FROM case_summaries WHERE run = ?", (name,))
            case_rows.forget(conn, name)
            conn.execute("DELETE FROM runs WHERE name = ?", (name,))
        return int(removed)

    def snapshot(self) -> AbstractContextManager[None]:
        """Reads inside see one state of the store (``_sqlite.snapshot``); writers go on."""
        return snapshot(self.db.conn)

    def finished_trials(self, name: str) -> set[tuple[str, int]]:
        """(case id, trial index) of the trials already stored for a run."""
        rows = self.db.conn.execute("SELECT case_id, idx FROM trials WHERE run = ?", (name,))
        return {(case_id, idx) for case_id, idx in rows}

    def add_trial(self, name: str, record: TrialRecord) -> None:
        """Store one trial of run ``name`` with its grades, atomically (replacing a stored one).

        Plain SQL in one transaction (the hot path: no sqlite-utils lookups), which also
        writes what reports list of the trial beside it (``_facts``) and adds it to its
        case's summary (``case_summaries``), taking a replaced trial's away first.
        """
        trial = ["run", *TRIALS.columns, *facts.COLUMNS]
        graded = [*KEY, *GRADES.columns]
        key = (name, record.case_id, record.idx)
        counts = summaries.tallies(record)
        with self._write() as conn:
            # (Most trials are new: the stored one is read, with its grades, only if there is one.)
            there = conn.execute(
                "SELECT 1 FROM trials WHERE run = ? AND case_id = ? AND idx = ?", key
            )
            old = read_trials(conn, *key) if there.fetchone() else []
            stale = bool(old) and summaries.take_away(
                conn, name, record.case_id, summaries.tallies(old[0]), counts
            )
            conn.execute(
                f"INSERT OR REPLACE INTO trials ({', '.join(trial)}) "
                f"VALUES ({', '.join('?' for _ in trial)})",
                (name, *TRIALS.encode(record), *facts.of(record)),
            )
            if old:
                conn.execute("DELETE FROM grades WHERE run = ? AND case_id = ? AND idx = ?", key)
            conn.executemany(
                f"INSERT INTO grades ({', '.join(graded)}) "
                f"VALUES ({', '.join('?' for _ in graded)})",
                [(*key, *GRADES.encode(grade)) for grade in record.grades],
            )
            if stale:
                summaries.recount(conn, name, record.case_id, read_trials(conn, *key[:2]))
            else:
                summaries.add(conn, name, record.case_id, counts)
            case_rows.forget(conn, name, record.case_id)

    def finish_run(self, name: str) -> None:
        """Mark a run finished, and keep each case as its report reads it (``_rows``)."""
        with self._write() as conn:
            self.db["runs"].update(name, {"finished": _now()})  # type: ignore[union-attr]
            case_rows.keep(conn, name)

    def trials(self, name: str, *, case: str | None = None) -> list[TrialRecord]:
        """A run's trials (``case``'s alone, if given), by case and index, with their grades."""
        return read_trials(self.db.conn, name, case)

    def trial_count(self, name: str) -> int:
        """How many trials a run has (as the store counts them: no trial is read)."""
        return summaries.count(self.db.conn, name)

    def case_summaries(self, name: str) -> list[summaries.CaseSummary]:
        """Each case of a run, by id, as the store counts it (no trial is read).

        Its trials by verdict, failures, causes, guards, grades and evidence: what a
        report counts, kept as trials are written.
        """
        return summaries.read(self.db.conn, name)

    def first_cassettes(self, name: str, *, failed: bool = False) -> list[tuple[str, str]]:
        """Each case's first cassette of a trial not passed (``failed``: the agent failed)."""
        return summaries.cassettes(self.db.conn, name, failed=failed)

    def case_tags(self, name: str) -> list[tuple[str, tuple[str, ...]]]:
        """(case id, tags) of each case of a run whose trials carry tags, by case id."""
        return summaries.tags(self.db.conn, name)

    def add_label(
        self,
        name: str,
        case_id: str,
        idx: int,
        verdict: Verdict | str,
        note: str = "",
        dimension: str = "",
        labeller: str = "",
    ) -> None:
        """Store a human verdict beside a trial (for one judged dimension, or ``""``: all).

        ``verdict`` is ``pass``, ``fail``, or ``unknown`` (also ``unsure``): the
        labeller could not tell. Labelling again replaces the labeller's own label only.

        Raises:
            ConfigError: The run has no such trial, or the verdict is none of those.
        """
        said = LABEL_VERDICTS.get(str(getattr(verdict, "value", verdict)))
        if said is None:
            raise ConfigError(f"a label is pass, fail or unsure, not {verdict!r}")
        with self._write() as conn:
            if not conn.execute(
                "SELECT 1 FROM trials WHERE run = ? AND case_id = ? AND idx = ?",
                (name, case_id, idx),
            ).fetchone():
                raise ConfigError(
                    f"run {name!r} has no trial {case_id}#{idx}; see `replay report {name}`"
                )
            self.db["labels"].upsert(  # type: ignore[union-attr]
                {
                    "run": name,
                    "case_id": case_id,
                    "idx": idx,
                    "dimension": dimension,
                    "verdict": said.value,
                    "note": note,
                    "labeled": _now(),
                    "labeller": labeller,
                },
                pk=LABEL_KEY,
            )

    def labels(self, name: str | None = None) -> list[LabelRecord]:
        """A run's human labels, or every run's."""
        where, args = ("WHERE run = ?", (name,)) if name is not None else ("", ())
        rows = self.db.conn.execute(
            "SELECT run, case_id, idx, dimension, verdict, note, labeled, labeller FROM labels "
            f"{where} ORDER BY run, case_id, idx, dimension, labeller",
            args,
        )
        return [
            LabelRecord(run, case_id, idx, dimension, Verdict(verdict), note, labeled, labeller)
            for run, case_id, idx, dimension, verdict, note, labeled, labeller in rows
        ]

    def add_judge_check(
        self,
        model: str,
        rubric_hashes: Sequence[str],
        *,
        passed: bool,
        reason: str,
        runs: Sequence[str],
        result: Mapping[str, Any],
    ) -> None:
        """Store a judge check for each rubric hash, replacing that judge's previous one."""
        checked = _now()
        with self._write():
            create_judge_checks(self.db.utils)  # (a store made this version before the table)
            self.db["judge_checks"].upsert_all(  # type: ignore[union-attr]
                [
                    {
                        "model": model,
                        "rubric_hash": rubric_hash,
                        "checked": checked,
                        "passed": int(passed),
                        "reason": reason,
                        "runs": json.dumps(list(runs)),
                        "result": json.dumps(dict(result)),
                    }
                    for rubric_hash in rubric_hashes
                ],
                pk=JUDGE_CHECK_KEY,
            )

    def judge_checks(self) -> dict[tuple[str, str], JudgeCheckRecord]:
        """Each (judge model, rubric hash)'s latest judge check."""
        if "judge_checks" not in self.db.table_names():
            return {}
        rows = self.db.conn.execute(
            "SELECT model, rubric_hash, checked, passed, reason, runs, result FROM judge_checks"
        )
        return {
            (model, rubric): JudgeCheckRecord(
                model, rubric, checked, bool(passed), reason, tuple(json.loads(runs)), json.loads(r)
            )
            for model, rubric, checked, passed, reason, runs, r in rows
        }
