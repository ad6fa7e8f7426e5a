"""The store waits for another process's write lock, in every write, and then says so.

Another process is played by a second connection that holds the write lock (``BEGIN
IMMEDIATE``) until a thread lets it go. Without the store taking the lock first, SQLite
answers "database is locked" at once where a transaction read before it wrote, whatever
the busy timeout.
"""

from __future__ import annotations

import sqlite3
import threading
from collections.abc import Callable, Iterator
from contextlib import closing, contextmanager
from pathlib import Path

import pytest

from recorder import ConfigError
from replay import Store, TrialRecord
from replay.graders import Verdict
from replay.results import _sqlite
from tests.replay.test_store_versions import VERSION_1


@contextmanager
def held(path: Path, seconds: float = 0.3) -> Iterator[None]:
    """The store's write lock, held by another connection for ``seconds`` from now."""
    other = sqlite3.connect(path, isolation_level=None, check_same_thread=False)
    other.execute("BEGIN IMMEDIATE")
    release = threading.Timer(seconds, other.execute, ("COMMIT",))
    release.start()
    try:
        yield
    finally:
        release.join()
        other.close()


def test_a_new_store_is_made_while_another_process_holds_the_lock(tmp_path: Path) -> None:
    path = tmp_path / "results.db"
    with held(path):
        store = Store(path)
    assert store.runs() == []
    with closing(sqlite3.connect(path)) as conn:
        assert conn.execute("PRAGMA journal_mode").fetchone()[0] == "wal"
        assert conn.execute("PRAGMA user_version").fetchone()[0] == 8


def test_an_old_store_is_migrated_while_another_process_holds_the_lock(tmp_path: Path) -> None:
    path = tmp_path / "v4.db"
    with closing(sqlite3.connect(path)) as conn:
        conn.executescript(VERSION_1)
        conn.execute("PRAGMA journal_mode = WAL")
        conn.execute("PRAGMA user_version = 4")
        conn.commit()
    with held(path):
        store = Store(path)
    assert [t.idx for t in store.trials("old")] == [0, 1]


WRITES: dict[str, Callable[[Store], object]] = {
    "start_run": lambda store: store.start_run("new", {}, {}),
    "add_trial": lambda store: store.add_trial(
        "r", TrialRecord(case_id="c", idx=1, verdict=Verdict.PASS)
    ),
    "finish_run": lambda store: store.finish_run("r"),
    "set_golden": lambda store: store.set_golden("r"),
    "add_label": lambda store: store.add_label("r", "c", 0, "pass", labeller="ana"),
    "add_judge_check": lambda store: store.add_judge_check(
        "m", ["h"], passed=True, reason="", runs=["r"], result={}
    ),
    "delete_run": lambda store: store.delete_run("r"),
}


@pytest.mark.parametrize("write", sorted(WRITES))
def test_every_write_waits_for_another_process_holding_the_lock(tmp_path: Path, write: str) -> None:
    path = tmp_path / "results.db"
    store = Store(path)
    store.start_run("r", {}, {})
    store.add_trial("r", TrialRecord(case_id="c", idx=0, verdict=Verdict.FAIL))
    store.runs()  # a read first, as a run reads before it writes
    with held(path):
        WRITES[write](store)
    again = Store(path)
    if write == "delete_run":
        assert again.runs() == []
    else:
        assert len(again.trials("r")) == 1 + (write == "add_trial")


def test_a_store_locked_too_long_is_a_one_line_error_naming_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = tmp_path / "results.db"
    Store(path)
    monkeypatch.setattr(_sqlite, "BUSY_SECONDS", 0.1)
    store = Store(path)  # (its connection waits BUSY_SECONDS for a lock)
    with held(path, seconds=1.0):
        with pytest.raises(ConfigError) as stuck:
            store.start_run("r", {}, {})
        message = str(stuck.value)
        assert "\n" not in message and f"the results store {path} stayed locked" in message
        assert "try again when it is done" in message
    store.start_run("r", {}, {})  # once it is let go
    assert store.runs() == ["r"]
