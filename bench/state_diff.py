"""What a trial changed: ``ChangeCapture`` + ``StateDiff`` vs DeepDiff of two snapshots.

For each table size, a SQLite ``.db`` fixture of one ``items`` table is built
in SQL, and every trial makes the same 10 row changes: 6 updates (one field
each), 2 inserts, 2 deletes, spread over the table.

Ours: a world (``Fixture.load`` + ``open``, once); per trial a
``ChangeCapture`` attached to ``world.conn`` (after ``open``: ``reset()``
rolls its TEMP log back, so each trial gets a new one), the 10 changes, then
the timed part: ``capture.take()`` + ``StateDiff.from_delta``. The incumbent:
snapshot the table into ``{id: {column: value}}`` before and after the same
changes, and ``DeepDiff(before, after)``; only the DeepDiff call is timed, the
snapshots are timed apart. Both results are checked (6 / 2 / 2 changes).

DeepDiff runs in a child process with a time budget: past
``DEEPDIFF_BUDGET_S`` it is stopped and reported as a lower bound.

Run alone: ``python -m bench.state_diff [--quick]``.
"""

from __future__ import annotations

import argparse
import json
import queue
import sqlite3
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO, Any

from recorder._capture import ChangeCapture
from replay.worlds._diff import StateDiff
from replay.worlds._world import Fixture, World

from ._report import ratio, secs, table, timed

FULL_ROWS = (10_000, 100_000, 1_000_000)
QUICK_ROWS = (10_000,)
SMOKE_ROWS = (1_000,)
TARGET_S = 1e-3
DEEPDIFF_BUDGET_S = 60.0
OURS_REPS, QUICK_OURS_REPS = 30, 20
WARMUP = 2
EXPECTED = {"updated": 6, "inserted": 2, "deleted": 2}
DEEPDIFF_EXPECTED = {"values_changed": 6, "dictionary_item_added": 2, "dictionary_item_removed": 2}


def _deepdiff_reps(rows: int, quick: bool) -> int:
    if quick:
        return 2
    return 3 if rows <= 10_000 else 2 if rows <= 100_000 else 1


def build_fixture(path: Path, rows: int) -> None:
    """Write a SQLite file with an ``items`` table of ``rows`` rows at ``path``."""
    conn = sqlite3.connect(path)
    try:
        conn.execute("PRAGMA journal_mode = OFF")
        conn.execute("PRAGMA synchronous = OFF")
        conn.execute(
            "CREATE TABLE items (id INTEGER PRIMARY KEY, sku TEXT NOT NULL, name TEXT NOT NULL, "
            "qty INTEGER NOT NULL, price REAL NOT NULL)"
        )
        conn.execute(
            "WITH RECURSIVE c(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM c WHERE x < ?) "
            "INSERT INTO items SELECT x, 'sku-' || x, 'item ' || x, x % 97, (x % 1000) / 100.0 "
            "FROM c",
            (rows,),
        )
        conn.commit()
    finally:
        conn.close()


def make_changes(conn: sqlite3.Connection, rows: int) -> None:
    """The trial: 6 updates (one field each), 2 inserts, 2 deletes, spread over the table."""
    ids = [rows * k // 8 + 1 for k in range(8)]
    for key in ids[:3]:
        conn.execute("UPDATE items SET qty = qty + 1 WHERE id = ?", (key,))
    for key in ids[3:6]:
        conn.execute("UPDATE items SET price = price + 0.5 WHERE id = ?", (key,))
    conn.executemany(
        "INSERT INTO items VALUES (?, ?, ?, ?, ?)",
        [(key, f"sku-{key}", f"new item {key}", 1, 9.99) for key in (rows + 1, rows + 2)],
    )
    conn.executemany("DELETE FROM items WHERE id = ?", [(key,) for key in ids[6:]])


@dataclass
class Incumbent:
    """DeepDiff of two snapshots, as measured by the child process."""

    snapshot_s: list[float] = field(default_factory=list)
    """Seconds to read the table into a dict: before, then after the changes."""
    deepdiff: list[float] = field(default_factory=list)
    stopped_after: float | None = None
    """Set when a DeepDiff call was stopped at the budget (seconds it had run)."""


@dataclass
class SizeResult:
    """One table size."""

    rows: int
    build_s: float
    ours: Ours
    theirs: Incumbent

    @property
    def ours_s(self) -> float:
        return statistics.median(self.ours.took)

    @property
    def theirs_s(self) -> float | None:
        """Median DeepDiff time; None when it was stopped."""
        if self.theirs.stopped_after is not None or not self.theirs.deepdiff:
            return None
        return statistics.median(self.theirs.deepdiff)

    @property
    def ok(self) -> bool:
        return self.ours_s <= TARGET_S


@dataclass
class DiffResult:
    """Every size measured."""

    sizes: list[SizeResult]
    ours_reps: int

    @property
    def worst(self) -> float:
        return max(s.ours_s for s in self.sizes)

    @property
    def ok(self) -> bool:
        return all(s.ok for s in self.sizes)


def _check(diff: StateDiff) -> None:
    assert diff.touched() == {"items"}, f"StateDiff touched {diff.touched()}"
    items = diff.table("items")
    got = {"updated": len(items.updated), "inserted": len(items.inserted)}
    got["deleted"] = len(items.deleted)
    assert got == EXPECTED, f"StateDiff found {got}"


@dataclass
class Ours:
    """Our side at one size."""

    load_s: float
    open_s: float
    attach: list[float]
    """``ChangeCapture(world.conn)``, per trial (not in the timed part)."""
    took: list[float]
    """``take()`` + ``from_delta``, per trial."""
    resets: int
    rebuilds: int
    """Resets that rebuilt the world from the fixture instead of rolling back."""


def measure_ours(db: Path, rows: int, reps: int) -> Ours:
    """Time ``take()`` + ``from_delta`` over ``reps`` trials on one world."""
    load_s, fixture = timed(lambda: Fixture.load(db))
    open_s, world = timed(fixture.open)
    assert isinstance(world, World)
    attach, took = [], []
    for i in range(WARMUP + reps):
        t0 = time.perf_counter()
        capture = ChangeCapture(world.conn)
        t1 = time.perf_counter()
        make_changes(world.conn, rows)
        t2 = time.perf_counter()
        delta, notes = capture.take()
        diff = StateDiff.from_delta(delta)
        t3 = time.perf_counter()
        assert not notes, notes
        _check(diff)
        capture.close()
        world.reset()
        if i >= WARMUP:
            attach.append(t1 - t0)
            took.append(t3 - t2)
    world.close()
    return Ours(load_s, open_s, attach, took, WARMUP + reps, world.rebuilds)


# -- the incumbent, in a child process --------------------------------------------


def snapshot(conn: sqlite3.Connection) -> dict[int, dict[str, Any]]:
    """The whole table as ``{id: {column: value}}``."""
    cur = conn.execute("SELECT * FROM items")
    names = [d[0] for d in cur.description]
    return {row[0]: dict(zip(names, row, strict=True)) for row in cur}


def _emit(**event: Any) -> None:
    print(json.dumps(event), flush=True)


def deepdiff_child(db: Path, reps: int) -> None:
    """Snapshot, change, snapshot, then DeepDiff ``reps`` times; report as JSON lines."""
    from deepdiff import DeepDiff

    conn = sqlite3.connect(db)
    rows = conn.execute("SELECT count(*) FROM items").fetchone()[0]
    before_s, before = timed(lambda: snapshot(conn))
    make_changes(conn, rows)
    after_s, after = timed(lambda: snapshot(conn))
    conn.rollback()
    conn.close()
    _emit(event="snapshot", seconds=[before_s, after_s])
    for _ in range(reps):
        _emit(event="start")
        took, diff = timed(lambda: DeepDiff(before, after))
        found = {kind: len(items) for kind, items in diff.items()}
        assert found == DEEPDIFF_EXPECTED, f"DeepDiff found {found}"
        _emit(event="deepdiff", seconds=took)


def _lines(stream: IO[str], out: queue.Queue[str | None]) -> None:
    for line in stream:
        out.put(line)
    out.put(None)


def _events(proc: subprocess.Popen[str], budget: float) -> Iterator[dict[str, Any] | None]:
    """The child's events; None when a DeepDiff call ran past ``budget`` (child killed)."""
    assert proc.stdout is not None
    lines: queue.Queue[str | None] = queue.Queue()
    threading.Thread(target=_lines, args=(proc.stdout, lines), daemon=True).start()
    timeout = 900.0  # building the snapshots
    while True:
        try:
            line = lines.get(timeout=timeout)
        except queue.Empty:
            proc.kill()
            yield None
            return
        if line is None:
            return
        event: dict[str, Any] = json.loads(line)
        timeout = budget if event["event"] == "start" else 900.0
        yield event


def measure_deepdiff(db: Path, reps: int, budget: float, log: Path) -> Incumbent:
    """Run the incumbent in a child process, stopping a DeepDiff call past ``budget``."""
    result = Incumbent()
    cmd = [sys.executable, "-m", "bench.state_diff", "--deepdiff-child", str(db), str(reps)]
    with log.open("w") as err:
        proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=err, text=True)
        started = 0.0
        for event in _events(proc, budget):
            if event is None:
                result.stopped_after = time.perf_counter() - started
                break
            if event["event"] == "snapshot":
                result.snapshot_s = event["seconds"]
            elif event["event"] == "start":
                started = time.perf_counter()
            elif event["event"] == "deepdiff":
                if event["seconds"] > budget:  # finished, but past the budget all the same
                    result.stopped_after = event["seconds"]
                    proc.kill()
                    break
                result.deepdiff.append(event["seconds"])
        code = proc.wait()
    if result.stopped_after is None and code != 0:
        raise RuntimeError(f"the DeepDiff child failed:\n{log.read_text()}")
    return result


def run(quick: bool = False, workdir: Path | None = None, smoke: bool = False) -> DiffResult:
    """Measure every size: ours in this process, DeepDiff in a child (``smoke``: that it runs)."""
    sizes = SMOKE_ROWS if smoke else QUICK_ROWS if quick else FULL_ROWS
    reps = QUICK_OURS_REPS if quick else OURS_REPS
    out = []
    with tempfile.TemporaryDirectory(prefix="agent-replay-bench-") as tmp:
        base = workdir or Path(tmp)
        for rows in sizes:
            db = base / f"items-{rows}.db"
            build_s, _ = timed(lambda: build_fixture(db, rows))  # noqa: B023
            ours = measure_ours(db, rows, reps)
            theirs = measure_deepdiff(
                db, _deepdiff_reps(rows, quick), DEEPDIFF_BUDGET_S, base / "deepdiff.log"
            )
            out.append(SizeResult(rows, build_s, ours, theirs))
            db.unlink()
    return DiffResult(out, reps)


def report(r: DiffResult) -> str:
    """Render the result as a table."""
    rows = []
    for s in r.sizes:
        theirs = s.theirs_s
        if theirs is not None:
            dd, vs = f"{secs(theirs)} (n={len(s.theirs.deepdiff)})", ratio(theirs, s.ours_s)
        else:
            dd = f"> {DEEPDIFF_BUDGET_S:.0f} s (stopped)"
            vs = f">= {DEEPDIFF_BUDGET_S / s.ours_s:,.0f}x"
        snap = ", ".join(secs(t) for t in s.theirs.snapshot_s)
        rows.append(
            [
                f"{s.rows:,}",
                secs(s.ours_s),
                dd,
                vs,
                snap,
                f"<= 1 ms  {'ok' if s.ok else 'MISSED':6}",
            ]
        )
    main = table(
        "Diff of a trial's changes (10 rows: 6 updated, 2 inserted, 2 deleted)",
        ["rows", "take + from_delta", "DeepDiff", "DeepDiff / ours", "snapshots", "target"],
        rows,
    )
    side = table(
        "Ours, untimed parts (once per size, and per trial)",
        ["rows", "build .db", "Fixture.load", "open", "ChangeCapture()", "rebuilding resets"],
        [
            [
                f"{s.rows:,}",
                secs(s.build_s),
                secs(s.ours.load_s),
                secs(s.ours.open_s),
                secs(statistics.median(s.ours.attach)),
                f"{s.ours.rebuilds} of {s.ours.resets}",
            ]
            for s in r.sizes
        ],
    )
    lines = [
        main,
        f"  ours: median of {r.ours_reps} trials, ChangeCapture.take() + StateDiff.from_delta "
        "on a world (ChangeCapture attached per trial).",
        "  DeepDiff(before, after) on {id: {column: value}} snapshots, in a child process, "
        f"stopped past {DEEPDIFF_BUDGET_S:.0f} s",
        "  (the ratio is then a lower bound). snapshots = reading the table into that dict, "
        "before / after the changes",
        "  (not in the DeepDiff time).",
        "",
        side,
    ]
    if any(s.ours.rebuilds for s in r.sizes):
        lines += [
            "  note: resets between trials rebuilt the world from the fixture instead of rolling "
            "back: ChangeCapture()",
            "  ended the world's transaction (it sets conn.isolation_level = None, which "
            "commits). Not in the timed part.",
        ]
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> None:
    """Run this benchmark alone."""
    parser = argparse.ArgumentParser(prog="python -m bench.state_diff", description=__doc__)
    parser.add_argument("--quick", action="store_true", help="10,000 rows only")
    parser.add_argument("--deepdiff-child", nargs=2, metavar=("DB", "REPS"), help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.deepdiff_child:
        deepdiff_child(Path(args.deepdiff_child[0]), int(args.deepdiff_child[1]))
        return
    print(report(run(quick=args.quick)))


if __name__ == "__main__":
    main()
