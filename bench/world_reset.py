"""Resetting a world between trials: ``World.reset()`` vs copying the fixture file.

For each size, a real SQLite ``.db`` fixture is built in SQL (one table,
``INTEGER PRIMARY KEY``, a 900-byte random blob per row). Ours:
``Fixture.load`` and ``fixture.open()`` once (one-time costs, reported
apart), then a small trial on ``world.conn`` (5 inserts, 5 updates, 1 delete,
through ``conn.execute`` and one ``with conn:`` block) followed by a timed
``world.reset()``, repeated. Every reset is checked: the touched rows are
back as they were, and after the last one the whole world hashes as the
fixture does. The incumbent, in the same run: ``shutil.copyfile`` of the
fixture to a fresh trial file, the cost of a file-copy reset (no fsync, the
source hot in the page cache: its best case).

The load is a target of its own at 1 GB (``LOAD_*``): its time, and the
process's peak memory when it returns (the high-water mark is reset just
before it, so building the fixture does not count). The content hash is
timed again alone on the world, against the v1 hash (``repr`` of every row)
it replaced.

Each size runs in a child process, so its peak memory is its own.

Run alone: ``python -m bench.world_reset [--quick]``.
"""

from __future__ import annotations

import argparse
import contextlib
import dataclasses
import json
import random
import shutil
import sqlite3
import statistics
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from recorder import world_hash
from replay.worlds._world import Fixture, World

from ._report import mb, ratio, secs, table, timed

FULL_SIZES = (10_000_000, 100_000_000, 1_000_000_000)
QUICK_SIZES = (10_000_000,)
TARGET_S = 1e-3
LOAD_SIZE = 1_000_000_000
"""The fixture size the load targets are held at (the quick run does not reach it)."""
LOAD_TARGET_S = 3.0
LOAD_TARGET_RSS = 1.5e9
V1_PIN = "0" * 16
"""Any 16 hex digits: ``world_hash(conn, like=V1_PIN)`` is the v1 hash."""
RESETS = 50
WARMUP = 3
REBUILDS = 3
BLOB = 900
ROW_BYTES = 1027
"""File bytes per row with a ``BLOB``-byte payload (measured: four rows per 4 KB page)."""


def _copies(size: int) -> int:
    """File copies to time: fewer for bigger fixtures."""
    return 10 if size <= 10_000_000 else 5 if size <= 100_000_000 else 3


def label(size: int) -> str:
    """``10 MB``, ``1 GB``."""
    return f"{size / 1e9:g} GB" if size >= 1_000_000_000 else f"{size / 1e6:g} MB"


@dataclass
class SizeResult:
    """What one fixture size measured (in a child process)."""

    target: int
    file_size: int
    rows: int
    build_s: float
    load_s: float
    """``Fixture.load`` (SQLite hashes the file's rows, then its bytes are read), once."""
    load_rss: int
    """Peak resident bytes when ``Fixture.load`` returns (0: unknown)."""
    open_s: float
    """``fixture.open()``, once."""
    hash_s: float
    """``world_hash`` of the world after the last reset (it is also in ``load_s``)."""
    v1_hash_s: float
    """The v1 ``world_hash`` of the same world (``repr`` of every row: the incumbent)."""
    resets: list[float]
    rebuild_s: float
    """``reset()`` after a tool ended the transaction with a raw ``COMMIT``: a rebuild."""
    copies: list[float]
    base_rss: int
    """Bytes resident once imports are done, before the fixture is built."""
    peak_rss: int
    wall_s: float

    @property
    def reset_s(self) -> float:
        return statistics.median(self.resets)

    @property
    def copy_s(self) -> float:
        return statistics.median(self.copies)

    @property
    def ok(self) -> bool:
        return self.reset_s <= TARGET_S


@dataclass
class ResetResult:
    """Every size measured."""

    sizes: list[SizeResult]

    @property
    def worst(self) -> float:
        return max(s.reset_s for s in self.sizes)

    @property
    def ok(self) -> bool:
        return all(s.ok for s in self.sizes)

    @property
    def load(self) -> SizeResult | None:
        """The size the load targets are held at, if this run measured it."""
        return next((s for s in self.sizes if s.target >= LOAD_SIZE), None)


def build_fixture(path: Path, size: int) -> int:
    """Write a SQLite file of about ``size`` bytes at ``path``; return its row count."""
    rows = max(100, round(size / ROW_BYTES))
    conn = sqlite3.connect(path)
    try:
        conn.execute("PRAGMA journal_mode = OFF")
        conn.execute("PRAGMA synchronous = OFF")
        conn.execute(
            "CREATE TABLE items (id INTEGER PRIMARY KEY, sku TEXT NOT NULL, "
            "qty INTEGER NOT NULL, payload BLOB)"
        )
        conn.execute(
            "WITH RECURSIVE c(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM c WHERE x < ?) "
            "INSERT INTO items SELECT x, 'sku-' || x, x % 97, randomblob(?) FROM c",
            (rows, BLOB),
        )
        conn.commit()
    finally:
        conn.close()
    got = path.stat().st_size
    assert abs(got - size) <= 0.1 * size, f"fixture is {got:,} bytes, wanted about {size:,}"
    return rows


Rows = dict[int, tuple[Any, ...]]


def _fetch(conn: sqlite3.Connection, ids: list[int]) -> Rows:
    marks = ", ".join("?" for _ in ids)
    cur = conn.execute(f"SELECT * FROM items WHERE id IN ({marks})", ids)
    return {row[0]: tuple(row) for row in cur}


@dataclass
class Trial:
    """The rows one trial touched, and how they looked before it."""

    inserted: list[int]
    updated: list[int]
    deleted: int
    before: Rows


def run_trial(conn: sqlite3.Connection, rows: int, rng: random.Random) -> Trial:
    """Insert 5 rows, update 5, delete 1, as a tool would; return what was touched."""
    picked = rng.sample(range(1, rows + 1), 6)
    trial = Trial(
        inserted=[rows + 1 + i for i in range(5)],
        updated=picked[:5],
        deleted=picked[5],
        before={},
    )
    trial.before = _fetch(conn, [*trial.inserted, *trial.updated, trial.deleted])
    insert = "INSERT INTO items VALUES (?, ?, ?, randomblob(?))"
    for key in trial.inserted[:3]:
        conn.execute(insert, (key, f"new-{key}", 1, BLOB))
    with conn:  # a tool's commit: a savepoint inside the trial
        conn.executemany(insert, [(key, f"new-{key}", 1, BLOB) for key in trial.inserted[3:]])
        conn.executemany(
            "UPDATE items SET qty = qty + 1000, sku = sku || '-changed' WHERE id = ?",
            [(key,) for key in trial.updated],
        )
    conn.execute("DELETE FROM items WHERE id = ?", (trial.deleted,))
    return trial


def check_changed(conn: sqlite3.Connection, trial: Trial) -> None:
    """Assert that the trial's writes are visible (so a reset has work to do)."""
    now = _fetch(conn, [*trial.inserted, *trial.updated, trial.deleted])
    assert all(key in now for key in trial.inserted), "the trial's inserts are missing"
    assert all(now[k] != trial.before[k] for k in trial.updated), "the trial's updates are missing"
    assert trial.deleted not in now, "the trial's delete did not happen"


def check_restored(conn: sqlite3.Connection, trial: Trial) -> None:
    """Assert that every row the trial touched is as it was before it."""
    now = _fetch(conn, [*trial.inserted, *trial.updated, trial.deleted])
    assert now == trial.before, "reset did not restore the rows the trial touched"


def _rss() -> tuple[int, int]:
    """(current, peak) resident bytes of this process; zeros where unknown.

    Linux: ``VmRSS`` / ``VmHWM``, which start afresh at ``exec`` (``ru_maxrss``
    would include the parent's size at ``fork``). Elsewhere: ``ru_maxrss`` only.
    """
    try:
        status = Path("/proc/self/status").read_text()
    except OSError:
        status = ""
    fields = dict(line.split(":", 1) for line in status.splitlines() if ":" in line)
    if "VmRSS" in fields and "VmHWM" in fields:
        current, peak = (int(fields[k].split()[0]) * 1024 for k in ("VmRSS", "VmHWM"))
        return current, peak
    try:
        import resource
    except ImportError:  # Windows
        return 0, 0
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    return 0, peak * (1 if sys.platform == "darwin" else 1024)


def _reset_peak() -> None:
    """Start the peak (``VmHWM``) afresh from here, where Linux allows it."""
    with contextlib.suppress(OSError):
        Path("/proc/self/clear_refs").write_text("5")


def measure_size(size: int, workdir: Path) -> SizeResult:
    """Build one fixture, then time our resets and the file copies (in this process)."""
    t_start = time.perf_counter()
    base_rss, _ = _rss()
    db, copy = workdir / f"fixture-{size}.db", workdir / f"trial-{size}.db"
    build_s, rows = timed(lambda: build_fixture(db, size))
    _reset_peak()
    load_s, fixture = timed(lambda: Fixture.load(db))
    _, load_rss = _rss()
    open_s, world = timed(fixture.open)
    assert isinstance(world, World)
    rng = random.Random(size)
    resets = []
    for i in range(WARMUP + RESETS):
        trial = run_trial(world.conn, rows, rng)
        check_changed(world.conn, trial)
        t0 = time.perf_counter()
        world.reset()
        took = time.perf_counter() - t0
        check_restored(world.conn, trial)
        if i >= WARMUP:
            resets.append(took)
    assert world.rebuilds == 0, f"{world.rebuilds} resets rebuilt the world from the fixture"
    hash_s, digest = timed(lambda: world_hash(world.conn))
    assert digest == fixture.hash, "after the resets the world no longer hashes as the fixture"
    v1_hash_s, _ = timed(lambda: world_hash(world.conn, like=V1_PIN))
    # A tool that ends the transaction itself: the next reset rebuilds from the bytes.
    rebuilds = []
    for i in range(REBUILDS):
        trial = run_trial(world.conn, rows, rng)
        world.conn.execute("COMMIT")
        rebuilds.append(timed(world.reset)[0])
        assert world.rebuilds == i + 1, "a raw COMMIT did not make the next reset rebuild"
        check_restored(world.conn, trial)
    world.close()
    copies = []
    for _ in range(_copies(size)):
        copy.unlink(missing_ok=True)
        copies.append(timed(lambda: shutil.copyfile(db, copy))[0])
        assert copy.stat().st_size == db.stat().st_size
    _, peak_rss = _rss()
    result = SizeResult(
        target=size,
        file_size=db.stat().st_size,
        rows=rows,
        build_s=build_s,
        load_s=load_s,
        load_rss=load_rss,
        open_s=open_s,
        hash_s=hash_s,
        v1_hash_s=v1_hash_s,
        resets=resets,
        rebuild_s=statistics.median(rebuilds),
        copies=copies,
        base_rss=base_rss,
        peak_rss=peak_rss,
        wall_s=0.0,
    )
    copy.unlink(missing_ok=True)
    db.unlink()
    result.wall_s = time.perf_counter() - t_start
    return result


def _child(size: int, workdir: Path) -> SizeResult:
    """Measure one size in a fresh Python process."""
    proc = subprocess.run(
        [sys.executable, "-m", "bench.world_reset", "--child", str(size), "--dir", str(workdir)],
        capture_output=True,
        text=True,
        timeout=900,
        check=False,
    )
    if proc.returncode != 0:
        raise RuntimeError(f"world_reset at {label(size)} failed:\n{proc.stderr}")
    return SizeResult(**json.loads(proc.stdout))


def run(quick: bool = False, workdir: Path | None = None) -> ResetResult:
    """Measure every size, each in a child process."""
    sizes = QUICK_SIZES if quick else FULL_SIZES
    with tempfile.TemporaryDirectory(prefix="agent-replay-bench-") as tmp:
        base = workdir or Path(tmp)
        return ResetResult([_child(size, base) for size in sizes])


def report(r: ResetResult) -> str:
    """Render the result as tables."""
    main = table(
        "Reset a world between trials (5 inserts, 5 updates, 1 delete per trial)",
        ["fixture", "rows", "World.reset()", "file copy", "copy / reset", "target"],
        [
            [
                f"{label(s.target)} ({mb(s.file_size)})",
                f"{s.rows:,}",
                f"{secs(s.reset_s)} (max {secs(max(s.resets))})",
                secs(s.copy_s),
                ratio(s.copy_s, s.reset_s),
                f"<= 1 ms  {'ok' if s.ok else 'MISSED':6}",
            ]
            for s in r.sizes
        ],
    )
    once = table(
        "One-time and fallback costs (not resets)",
        [
            "fixture",
            "build .db",
            "Fixture.load",
            "load peak",
            "world_hash",
            "v1 hash",
            "v1 / hash",
            "open",
            "rebuild reset",
            "peak RSS",
            "child wall",
        ],
        [
            [
                label(s.target),
                secs(s.build_s),
                secs(s.load_s),
                mb(s.load_rss) if s.load_rss else "n/a",
                secs(s.hash_s),
                secs(s.v1_hash_s),
                ratio(s.v1_hash_s, s.hash_s),
                secs(s.open_s),
                secs(s.rebuild_s),
                f"{mb(s.peak_rss)} (+{mb(s.peak_rss - s.base_rss)})" if s.peak_rss else "n/a",
                secs(s.wall_s),
            ]
            for s in r.sizes
        ],
    )
    reps = ", ".join(f"{len(s.copies)} ({label(s.target)})" for s in r.sizes)
    lines = [
        main,
        f"  World.reset(): median of {RESETS} (after {WARMUP} warm-up trials); every reset "
        "checked (touched rows restored,",
        "  then the whole world hashed against the fixture). file copy: shutil.copyfile of the "
        "fixture to a fresh file,",
        f"  no fsync, source in the page cache; medians of {reps}.",
        "",
        once,
        "  Fixture.load = world_hash (v2: rows packed in bulk with msgpack) through a memory map, "
        "then the .db file's bytes,",
        "  in one read transaction. load peak: the process's high-water mark when it returns "
        f"(target at {label(LOAD_SIZE)}: <= {secs(LOAD_TARGET_S)},",
        f"  <= {mb(LOAD_TARGET_RSS)}). world_hash is timed again alone on the world, and the v1 "
        "hash (repr of every row, what",
        "  pins before v2 hold) on the same world. rebuild reset = reset() after a tool ran a raw "
        f"COMMIT (median of {REBUILDS}).",
        "  peak RSS: the child process's high-water mark from the load on (VmHWM;",
        "  in brackets: above its RSS before the fixture was built).",
    ]
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> None:
    """Run this benchmark alone."""
    parser = argparse.ArgumentParser(prog="python -m bench.world_reset", description=__doc__)
    parser.add_argument("--quick", action="store_true", help="10 MB only")
    parser.add_argument("--child", type=int, help=argparse.SUPPRESS)
    parser.add_argument("--dir", type=Path, help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.child is not None:
        result = measure_size(args.child, args.dir or Path(tempfile.gettempdir()))
        print(json.dumps(dataclasses.asdict(result)))
        return
    print(report(run(quick=args.quick)))


if __name__ == "__main__":
    main()
