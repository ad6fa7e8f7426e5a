"""Files `replay promote` writes: a promote cut off anywhere leaves each old or whole (issue 29)."""

from __future__ import annotations

from pathlib import Path

import pytest

from replay import load_case
from replay.cases import replacing
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
