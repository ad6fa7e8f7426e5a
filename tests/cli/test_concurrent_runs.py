"""Many `replay run` at once on one store, new or of an older version: none dies, none is lost.

Each run is a real `replay` process. So that they meet where it hurts (making or
migrating the store's tables, switching it to WAL), each imports the command line
first and waits at a barrier: they open the store within a millisecond of each other.
"""

from __future__ import annotations

import os
import sqlite3
import subprocess
import sys
import time
from contextlib import closing
from pathlib import Path

import pytest

from examples.shop import refund_policy
from replay import Store
from replay.graders import Verdict
from replay.stub_llm import StubLLM
from tests.cli.test_run import AGENT, CASE
from tests.helpers import REPO
from tests.replay.test_store_versions import VERSION_1

pytestmark = pytest.mark.slow

RUNS = 6
TRIALS = 2

# `replay` itself, started when the test says go (sys.argv: the command's arguments).
AT_THE_BARRIER = """
import sys, time
from pathlib import Path
from replay._cli.main import main
ready, go = Path(sys.argv.pop(1)), Path(sys.argv.pop(1))
ready.touch()
while not go.exists():
    time.sleep(0.001)
sys.argv[0] = "replay"
main()
"""


def run_at_once(
    store: Path, tmp_path: Path, llm_url: str, prefix: str, runs: int = RUNS
) -> list[str]:
    """Start ``runs`` `replay run` of CASE on ``store`` at once; assert each exits 0 without a
    traceback. Returns the run names."""
    barrier = tmp_path / f"barrier-{prefix}"
    barrier.mkdir()
    go = barrier / "go"
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    names = [f"{prefix}{i}" for i in range(runs)]
    procs = []
    for i, name in enumerate(names):
        args = ["run", CASE, "--run", name, "-k", str(TRIALS), "-j", "1", "--store", str(store)]
        args += ["--isolation", "none"]  # (the store is what is tested: no zygote each)
        command = [sys.executable, "-c", AT_THE_BARRIER, str(barrier / f"ready-{i}"), str(go)]
        procs.append(
            subprocess.Popen(
                [*command, *args, "--llm-url", llm_url, *AGENT],
                env=env,
                cwd=REPO,
                stdout=subprocess.DEVNULL,
                stderr=subprocess.PIPE,
            )
        )
    try:
        deadline = time.monotonic() + 240  # a hang guard only: imports on a busy machine
        while time.monotonic() < deadline and len(list(barrier.glob("ready-*"))) < runs:
            if any(p.poll() is not None for p in procs):
                break  # one died before the barrier: its stderr says why, below
            time.sleep(0.01)
        go.touch()
        errors = [p.communicate(timeout=240)[1].decode() for p in procs]
    finally:
        for p in procs:
            if p.poll() is None:
                p.kill()
                p.wait()
    for name, p, err in zip(names, procs, errors, strict=True):
        assert "Traceback" not in err, f"{name}:\n{err}"
        assert p.returncode == 0, f"{name} exited {p.returncode}:\n{err}"
    return names


def assert_stored_once(store: Path, names: list[str]) -> None:
    results = Store(store)
    for name in names:
        trials = results.trials(name)
        assert sorted(t.idx for t in trials) == list(range(TRIALS)), name
        assert all(t.verdict is Verdict.PASS for t in trials), name
        run = results.run(name)
        assert run is not None and run.finished, name
    with closing(sqlite3.connect(store)) as conn:
        assert conn.execute("PRAGMA user_version").fetchone()[0] == 8
        assert conn.execute("PRAGMA journal_mode").fetchone()[0] == "wal"
        assert conn.execute("PRAGMA integrity_check").fetchone()[0] == "ok"


def test_runs_started_at_once_on_a_new_store_all_finish_and_store_every_trial_once(
    tmp_path: Path,
) -> None:
    store = tmp_path / "new" / "results.db"  # not even its folder exists yet
    with StubLLM(refund_policy()) as llm:
        names = run_at_once(store, tmp_path, llm.openai_base_url, "a")
    assert_stored_once(store, names)
    assert sorted(Store(store).runs()) == names
    with closing(sqlite3.connect(store)) as conn:
        (n,) = conn.execute("SELECT COUNT(*) FROM trials").fetchone()
    assert n == RUNS * TRIALS


def schema(path: Path) -> list[tuple[str, str, str]]:
    with closing(sqlite3.connect(path)) as conn:
        return conn.execute("SELECT type, name, sql FROM sqlite_master ORDER BY name").fetchall()


def test_runs_started_at_once_on_a_version_4_store_migrate_it_once(tmp_path: Path) -> None:
    store, alone = tmp_path / "v4.db", tmp_path / "alone.db"
    for path in (store, alone):
        with closing(sqlite3.connect(path)) as conn:  # version 4: labels keyed without labeller
            conn.executescript(VERSION_1)
            conn.execute(
                "INSERT INTO labels VALUES ('old', 'refund-4812', 0, '', 'fail', 'no', 'x')"
            )
            conn.execute("PRAGMA user_version = 4")
            conn.commit()
    Store(alone)  # migrated by one process: what the store must look like after many
    with StubLLM(refund_policy()) as llm:
        names = run_at_once(store, tmp_path, llm.openai_base_url, "m", runs=4)
    assert_stored_once(store, names)
    assert schema(store) == schema(alone)
    results = Store(store)
    (kept,) = results.labels("old")  # the old label, kept once, now nobody's
    assert (kept.verdict, kept.note, kept.labeller) == (Verdict.FAIL, "no", "")
    assert [t.idx for t in results.trials("old")] == [0, 1]
