"""Files `replay promote` writes: a promote cut off anywhere leaves each old or whole (issue 29)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from replay import load_case
from replay.cases import replacing, sweep_parts, write_whole
from tests.helpers import REPO, replay

CASSETTE = REPO / "cassettes" / "refund-4812.cassette"
FIXTURE = REPO / "examples" / "shop" / "fixture.sql"


def _promote(out: Path, expect: str) -> tuple[int, str, str]:
    args = ["promote", str(CASSETTE), "--id", "refund-again", "--out", str(out)]
    return replay(*args, "--fixture", str(FIXTURE), "--expect", expect)


def _contents(out: Path) -> dict[str, bytes]:
    return {str(p.relative_to(out)): p.read_bytes() for p in sorted(out.rglob("*")) if p.is_file()}


def test_a_promote_cut_off_anywhere_leaves_each_file_old_or_whole(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The process dies at each flush in turn, before its file is renamed into place."""
    out = tmp_path / "regression"
    assert _promote(out, "orders.count() == 1")[0] == 0
    old = _contents(out)
    assert sorted(old) == [
        "cassettes/refund-again.cassette",
        "refund-again.fixture.sql",
        "refund-again.yaml",
    ]
    seen: list[dict[str, bytes]] = []
    for cut in range(1, 20):
        calls = 0

        def killed(fd: int, cut: int = cut) -> None:
            nonlocal calls
            calls += 1
            if calls == cut:  # the process dies after writing, before the file is whole
                raise KeyboardInterrupt

        with monkeypatch.context() as patch:
            patch.setattr("os.fsync", killed)
            code = _promote(out, "orders.count() == 2")[0]
        seen.append(_contents(out))
        if code == 0:  # every write done: the cut came after the last one
            break
        assert sorted(seen[-1]) == sorted(old), "a part file was left behind"
    else:
        pytest.fail("promote never finished")
    assert cut > 3  # it was cut off at each of its three files at least
    new = _contents(out)
    assert new["refund-again.yaml"] != old["refund-again.yaml"]
    for files in seen:
        for name, data in files.items():
            assert data in (old[name], new[name]), f"{name} is torn"
    assert load_case(out / "refund-again.yaml").assertions == ["orders.count() == 2"]


def test_a_failed_write_leaves_no_part_and_the_old_file(tmp_path: Path) -> None:
    path = tmp_path / "f.cassette"
    path.write_text("old")
    with pytest.raises(RuntimeError), replacing(path) as tmp:
        tmp.write_text("half")
        raise RuntimeError
    assert [p.name for p in tmp_path.iterdir()] == ["f.cassette"] and path.read_text() == "old"
    with replacing(path) as tmp:
        tmp.write_text("new")
    assert [p.name for p in tmp_path.iterdir()] == ["f.cassette"] and path.read_text() == "new"


def test_a_killed_writer_s_file_is_removed_by_the_next_write_and_a_live_one_s_is_not(
    tmp_path: Path,
) -> None:
    """One writer is SIGKILLed inside ``replacing``; another is still writing (issue 29)."""
    path = tmp_path / "junit.xml"
    hold = (
        "import sys, time; from pathlib import Path; from replay.cases import replacing\n"
        "with replacing(Path(sys.argv[1])) as tmp:\n"
        "    tmp.write_text('half'); print(tmp.name, flush=True); time.sleep(600)\n"
    )
    writers = [
        subprocess.Popen([sys.executable, "-c", hold, str(path)], stdout=subprocess.PIPE, text=True)
        for _ in range(2)
    ]
    killed = writers[0]  # (the other lives on, writing)
    try:
        parts = [w.stdout.readline().strip() for w in writers if w.stdout]
        killed.kill()
        killed.wait(timeout=60)
        assert sorted(p.name for p in tmp_path.iterdir()) == sorted(parts)
        write_whole(path, "whole")
        assert sorted(p.name for p in tmp_path.iterdir()) == sorted(["junit.xml", parts[1]])
        assert path.read_text() == "whole"
    finally:
        for writer in writers:
            writer.kill()
            writer.communicate(timeout=60)  # (and its pipe closed)


def test_files_beside_it_that_replacing_did_not_name_are_left_alone(tmp_path: Path) -> None:
    """A sweep removes only ``.NAME.PID-HEX.part`` files of dead writers, whatever else is there."""
    path = tmp_path / "junit.xml"
    others = [
        ".junit.xml.99999999999999999999-0a1b2c3d.part",  # no pid fits
        ".junit.xml.\u00b2-0a1b2c3d.part",  # a digit to str.isdigit, not to int
        ".junit.xml.5-x.part",
        ".junit.xml.b.1-0a1b2c3d.part",  # another file's, ".junit.xml.b"
        "junit.xml.1-0a1b2c3d.part",
    ]
    for name in others:
        (tmp_path / name).write_text("someone's")
    gone = subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"],
                          capture_output=True, text=True, check=True).stdout.strip()  # fmt: skip
    os.mkfifo(tmp_path / f".junit.xml.{gone}-0a1b2c3d.part")  # a dead writer's: no hang
    write_whole(path, "whole")
    assert path.read_text() == "whole"
    assert sorted(p.name for p in tmp_path.iterdir()) == sorted(["junit.xml", *others])


def test_a_folder_swept_once_loses_the_dead_writers_parts_of_every_name(tmp_path: Path) -> None:
    """What a driver sending cassettes' bytes sweeps once a run (``sweep_parts``): the parts
    of dead writers, whichever file each was to become; a live writer's and other names stay."""
    gone = subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"],
                          capture_output=True, text=True, check=True).stdout.strip()  # fmt: skip
    dead = [f".case-{n}.cassette.{gone}-0a1b2c3d.part" for n in range(3)]
    kept = [
        f".case-9.cassette.{os.getpid()}-0a1b2c3d.part",  # a writer that lives (this one)
        f"case-1.cassette.{gone}-0a1b2c3d.part",  # not a name replacing makes
        f".case-1.cassette.{gone}-xyz.part",
        "case-1.cassette",
    ]
    for name in dead + kept:
        (tmp_path / name).write_text("someone's")
    sweep_parts(tmp_path)
    assert sorted(p.name for p in tmp_path.iterdir()) == sorted(kept)
    sweep_parts(tmp_path / "no such folder")  # nothing to sweep: no error
