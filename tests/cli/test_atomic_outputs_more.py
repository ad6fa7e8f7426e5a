"""`graduate`, a run's returned cassettes and a tau-bench import, cut off: old or whole (issue 29).

As in tests/cli/test_atomic_outputs.py, the process "dies" (``KeyboardInterrupt``, click's
"Aborted!" in a command) at a flush, after a file's bytes are written and before it is
renamed into place: each file it writes is then as it was, or absent, never torn, and no
part file is left behind.
"""

from __future__ import annotations

import errno
from pathlib import Path
from typing import Any, cast

import pytest

from recorder import read_cassette
from replay import RunSpec, Store, TrialRecord
from replay.graders import Verdict
from replay.runs._driver import Driver
from replay.runs._work import Done
from tests.helpers import REPO, replay
from tests.replay.test_import_taubench import record, write

CASE = REPO / "examples" / "shop" / "cases" / "refund-4812.yaml"


def _files(root: Path) -> dict[str, bytes]:
    return {
        str(p.relative_to(root)): p.read_bytes() for p in sorted(root.rglob("*")) if p.is_file()
    }


def _cut_at(
    monkeypatch: pytest.MonkeyPatch, cut: int, error: BaseException | None = None
) -> list[int]:
    """Make the ``cut``-th ``os.fsync`` the moment the process dies (or ``error`` is raised);
    return the calls made."""
    calls: list[int] = []

    def killed(fd: int) -> None:
        calls.append(fd)
        if len(calls) == cut:
            raise error or KeyboardInterrupt

    monkeypatch.setattr("os.fsync", killed)
    return calls


@pytest.mark.parametrize("moves", [True, False], ids=["moved", "in-place"])
def test_a_graduate_cut_off_leaves_the_case_as_it_was(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, moves: bool
) -> None:
    folder = tmp_path / "cases" / ("capability" if moves else "mixed")
    folder.mkdir(parents=True)
    case = folder / "refund.yaml"
    case.write_text(CASE.read_text().replace("suite: regression", "suite: capability"))
    old = _files(tmp_path)
    with monkeypatch.context() as patch:
        calls = _cut_at(patch, 1)
        assert replay("graduate", str(case))[0] != 0
    assert calls, "graduate wrote without flushing"
    assert _files(tmp_path) == old  # no new file, no part file, the old one as it was
    code, out, err = replay("graduate", str(case))
    assert code == 0, err
    moved = tmp_path / "cases" / "regression" / "refund.yaml" if moves else case
    assert out == f"graduated: {moved}\n"
    assert sorted(_files(tmp_path)) == [str(moved.relative_to(tmp_path))]
    assert "suite: regression" in moved.read_text()


def test_a_run_storing_returned_cassettes_cut_off_leaves_each_old_or_whole(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Cassettes a remote worker sent back are flushed before the rename, then stored."""
    out = tmp_path / "cassettes"
    out.mkdir()
    (out / "a-0.cassette").write_bytes(b"old")
    store = Store(tmp_path / "r.db")
    store.start_run("r", {}, {})
    spec = RunSpec(name="r", cases=[], mode="review", out=str(out))
    driver = Driver(spec, cast(Any, None), None, (), out, store, None)
    done = Done(
        "a",
        0,
        TrialRecord(case_id="a", idx=0, verdict=Verdict.PASS),
        {"a-0.cassette": b"new" * 1000, "a-1.cassette": b"other" * 1000},
    )
    for cut in (1, 2):
        with monkeypatch.context() as patch:
            calls = _cut_at(patch, cut)
            with pytest.raises(KeyboardInterrupt):
                driver._store(done)
        assert len(calls) == cut, "a returned cassette was renamed into place unflushed"
        files = _files(out)
        assert files["a-0.cassette"] == (b"old" if cut == 1 else b"new" * 1000)
        assert sorted(files) == ["a-0.cassette"]  # a-1 not there yet, and no part file
        assert store.trials("r") == []  # stored only once its cassettes are whole
    driver._store(done)
    assert _files(out) == {"a-0.cassette": b"new" * 1000, "a-1.cassette": b"other" * 1000}
    (trial,) = store.trials("r")
    assert trial.cassette == str(out / "a-0.cassette")


def test_a_tau_bench_import_cut_off_leaves_no_cassette_and_no_run(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    (tmp_path / "in").mkdir()
    source = write(tmp_path / "in", [record(3, 0), record(3, 1), record(4, 0)])
    out, db = tmp_path / "cassettes", tmp_path / "results.db"
    args = ["import", "tau-bench-trajectories", str(source), "--out", str(out), "--store", str(db)]
    for cut in (1, 2, 3):
        with monkeypatch.context() as patch:
            calls = _cut_at(patch, cut)
            assert replay(*args)[0] != 0
        assert len(calls) == cut, "a cassette was written in place"
        assert not out.exists() or _files(out) == {}  # none of them, and no part file
        assert Store(db).run("tau-bench-gpt-4o-airline") is None
    code, printed, err = replay(*args)
    assert code == 0, err
    assert "imported 3 trials of 2 cases" in printed
    names = sorted(_files(out))
    assert names == [f"tau-bench-airline-{t}.cassette" for t in ("3-0", "3-1", "4-0")]
    assert all(read_cassette(out / name).complete for name in names)


def test_a_failed_tau_bench_write_takes_back_the_cassettes_already_written(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A write that fails half-way (a full disk): the import can simply be run again."""
    (tmp_path / "in").mkdir()
    source = write(tmp_path / "in", [record(3, 0), record(4, 0)])
    out, db = tmp_path / "cassettes", tmp_path / "results.db"
    args = ["import", "tau-bench-trajectories", str(source), "--out", str(out), "--store", str(db)]
    with monkeypatch.context() as patch:
        _cut_at(patch, 2, OSError(errno.ENOSPC, "No space left on device"))
        with pytest.raises(OSError, match="No space"):
            replay(*args)
    assert _files(out) == {}
    assert replay(*args)[0] == 0 and len(_files(out)) == 2
