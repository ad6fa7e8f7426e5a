"""Case ids and run names are names, not paths; case files have a size bound (issue 29)."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from recorder import ConfigError
from replay import CaseFileError, RunSpec, Store, execute, load_case
from replay.cases import (
    MAX_CASE_BYTES,
    NAME_MAX_BYTES,
    NAME_RULE,
    check_name,
    inside,
    name_problem,
    read_bounded,
    write_whole,
)
from replay.modes import cassette_name

GOOD = [
    "refund-4812",
    "tau2-airline-12",
    "tau-bench-retail-3",
    "a.b_c:d@e+f",
    "_x",
    "refund 4812",
    'a <b>&"steady"?#50%',  # (tests/cli/test_view.py's, for the escaping of pages)
    "caf\u00e9",
    "X" * 128,
    "\u00e9" * 64,
]
BAD = [
    "",
    "../x",
    "..",
    "a/b",
    "/abs",
    "a\\b",
    "a..b",
    ".hidden",
    "-option",
    " lead",
    "trail ",
    "a\x00b",
    "a\nb",
    "a\tb",
    "a\x1b]0;T\x07",
    "a\u202eb",
    "x" * 129,
    "\u00e9" * 65,
]


def _files(root: Path) -> set[Path]:
    return {p for p in root.rglob("*")}


@pytest.mark.parametrize("name", GOOD)
def test_names_of_every_kind_in_use_pass(name: str) -> None:
    assert name_problem(name) is None and check_name(name, "case id") == name


@pytest.mark.parametrize("name", BAD)
def test_paths_and_control_characters_are_refused_in_one_line(name: str) -> None:
    with pytest.raises(ConfigError) as info:
        check_name(name, "case id")
    message = str(info.value)
    assert message.startswith("case id ") and "\n" not in message
    assert NAME_RULE in message and f"at most {NAME_MAX_BYTES} bytes" in message
    assert not any(ord(c) < 32 for c in message)  # shown escaped, never raw


def test_a_huge_name_is_quoted_cut() -> None:
    with pytest.raises(ConfigError) as info:
        check_name("/" * 10_000, "`name`")
    assert len(str(info.value)) < 300


def test_a_case_id_that_is_a_path_is_refused_naming_file_and_field(tmp_path: Path) -> None:
    (tmp_path / "world.sql").write_text("create table t (id integer primary key);")
    path = tmp_path / "case.yaml"
    path.write_text('id: "../../../../tmp/x/PWN"\ninstruction: do it\nfixture: world.sql\n')
    with pytest.raises(CaseFileError) as info:
        load_case(path)
    assert info.value.field == "id"
    assert str(info.value).startswith(f"{path} (field id): '../../../../tmp/x/PWN' is not a name")
    assert NAME_RULE in str(info.value) and "\n" not in str(info.value)


def test_cassette_names_refuse_a_path_whoever_made_the_case() -> None:
    assert cassette_name("refund-4812", 3) == "refund-4812-3.cassette"
    with pytest.raises(ConfigError, match=r"case id '\.\./x' is not a name"):
        cassette_name("../x", 0)


def test_a_run_name_that_is_a_path_is_refused_by_the_spec() -> None:
    with pytest.raises(ConfigError, match=r"`name` '\.\./\.\./x/RUN' is not a name"):
        RunSpec(name="../../x/RUN", cases=["c.yaml"], mode="review")
    stored = RunSpec(name="ok", cases=["c.yaml"], mode="review").to_stored()
    with pytest.raises(ConfigError, match="is not a name"):  # a stored spec is read so too
        RunSpec.from_stored({**stored, "name": "a/b"})


def test_paths_made_from_names_stay_in_their_folder(tmp_path: Path) -> None:
    folder = tmp_path / "cassettes"
    assert inside(folder, folder / "run" / "c-0.cassette", "x") == folder / "run" / "c-0.cassette"
    with pytest.raises(ConfigError, match=r"run name '\.\.' leads out of"):
        inside(folder, folder / ".." / "elsewhere", "run name '..'")
    folder.mkdir()
    (tmp_path / "outside").mkdir()
    (folder / "link").symlink_to(tmp_path / "outside")  # a name can be a planted link
    with pytest.raises(ConfigError, match="leads out of"):
        inside(folder, folder / "link" / "c-0.cassette", "case id 'link'")


def test_traversal_through_the_public_api_writes_nothing(tmp_path: Path) -> None:
    """``execute`` with a case id or run name that is a path: refused, no file appears."""
    work = tmp_path / "work"
    (tmp_path / "x").mkdir()  # where ../../../../x/PWN-0.cassette would land
    (work / "x").mkdir(parents=True)  # and ../../x/RUN
    (work / "world.sql").write_text("create table t (id integer primary key);")
    case = work / "case.yaml"
    case.write_text('id: "../../../../x/PWN"\ninstruction: do it\nfixture: world.sql\n')
    store = Store(work / ".replay" / "results.db")
    before = _files(tmp_path)
    with pytest.raises(CaseFileError, match="is not a name"):
        execute(RunSpec(name="ok", cases=[str(case)], mode="review", cassettes=str(work)), store)
    with pytest.raises(ConfigError, match="is not a name"):
        execute(RunSpec(name="../../x/RUN", cases=[str(case)], mode="review"), store)
    assert _files(tmp_path) == before


def test_a_case_file_over_the_bound_is_refused_unparsed(tmp_path: Path) -> None:
    path = tmp_path / "big.yaml"
    with path.open("wb") as f:  # 11 MB: valid YAML, if it were parsed
        f.write(b"id: big\ninstruction: do it\nfixture: world.sql\n")
        f.write(b"# padding\n" * (11 * 1024 * 1024 // 10))
    assert path.stat().st_size > MAX_CASE_BYTES
    with pytest.raises(CaseFileError) as info:
        load_case(path)
    assert str(info.value) == (
        f"{path}: larger than 10 MiB ({MAX_CASE_BYTES:,} bytes): refused unread "
        "(a case file is an instruction, a fixture and assertions)"
    )


def test_a_case_file_at_the_bound_is_read(tmp_path: Path) -> None:
    path = tmp_path / "edge.yaml"
    path.write_bytes(b"#" * MAX_CASE_BYTES)
    assert len(read_bounded(path)) == MAX_CASE_BYTES
    with path.open("ab") as f:
        f.write(b"#")
    with pytest.raises(OSError, match="larger than 10 MiB"):
        read_bounded(path)


def test_files_written_whole_get_the_mode_any_file_gets(tmp_path: Path) -> None:
    old = os.umask(0o022)
    try:
        write_whole(tmp_path / "sub" / "f.txt", "x")
    finally:
        os.umask(old)
    assert (tmp_path / "sub" / "f.txt").stat().st_mode & 0o777 == 0o644
    assert [p.name for p in (tmp_path / "sub").iterdir()] == ["f.txt"]
