"""Case ids and run names that are paths: refused with exit 2, and no file appears (issue 29)."""

from __future__ import annotations

from pathlib import Path

import pytest

from replay import Store
from replay.cases import NAME_RULE
from tests.helpers import REPO, replay

CASSETTE = REPO / "cassettes" / "refund-4812.cassette"
FIXTURE = REPO / "examples" / "shop" / "fixture.sql"


@pytest.fixture
def work(tmp_path: Path) -> Path:
    """A project folder with a store, and the folders a traversal would write into."""
    work = tmp_path / "work"
    (work / "cases").mkdir(parents=True)
    (tmp_path / "x").mkdir()  # .replay/cassettes/RUN/../../../../x: tmp_path/x
    (work / "x").mkdir()  # .replay/cassettes/../../x: work/x
    (work / "world.sql").write_text(FIXTURE.read_text())
    Store(work / ".replay" / "results.db")  # made beforehand: the listings compare the rest
    return work


def _files(root: Path) -> set[Path]:
    """Every file and folder under ``root`` but the store's own (its WAL comes and goes)."""
    return {p for p in root.rglob("*") if not p.name.startswith("results.db-")}


def _refused(err: str, given: str) -> None:
    assert err.count("\n") == 1 and err.startswith("error: ")
    assert f"{given!r} is not a name" in err and NAME_RULE in err, err


def test_a_case_id_that_is_a_path_is_refused(work: Path, tmp_path: Path) -> None:
    case = work / "cases" / "pwn.yaml"
    case.write_text('id: "../../../../x/PWN"\ninstruction: Refund it.\nfixture: ../world.sql\n')
    before = _files(tmp_path)
    store = str(work / ".replay" / "results.db")
    args = ["run", str(case), "--run", "ok", "--mode", "review", "--cassettes", str(work)]
    code, out, err = replay(*args, "--store", store)
    assert (code, out) == (2, "")
    assert err.startswith(f"error: {case} (field id): "), err
    _refused(err, "../../../../x/PWN")
    assert _files(tmp_path) == before


@pytest.mark.parametrize("name", ["../../x/RUN", "../../../../x/RUN", "a/b", "..", "a\x1b[2Jb"])
def test_a_run_name_that_is_a_path_is_refused(work: Path, tmp_path: Path, name: str) -> None:
    case = REPO / "examples" / "shop" / "cases" / "refund-4812.yaml"
    before = _files(tmp_path)
    store = str(work / ".replay" / "results.db")
    for extra in ([], ["--resume"]):
        args = ["run", str(case), "--run", name, "--mode", "review", "--cassettes", str(work)]
        code, out, err = replay(*args, *extra, "--store", store)
        assert (code, out) == (2, "")
        assert err.startswith("error: --run "), err
        _refused(err, name)
    assert _files(tmp_path) == before


def test_a_promoted_case_id_that_is_a_path_is_refused(work: Path, tmp_path: Path) -> None:
    before = _files(tmp_path)
    out = work / "regression"
    args = ["promote", str(CASSETTE), "--out", str(out), "--fixture", str(FIXTURE)]
    code, stdout, err = replay(*args, "--id", "../../x/PWN")
    assert (code, stdout) == (2, "")
    _refused(err, "../../x/PWN")
    assert _files(tmp_path) == before
