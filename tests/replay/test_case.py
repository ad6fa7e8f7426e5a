"""Case files: validated, paths resolved against the file, errors naming file and field."""

from __future__ import annotations

from pathlib import Path

import pytest

from replay import CaseFileError, Scoring, Suite, load_case
from tests.helpers import REPO

DEMO = REPO / "examples" / "shop" / "cases" / "refund-4812.yaml"


def test_the_demo_case_loads() -> None:
    case = load_case(DEMO)
    assert case.id == "refund-4812" and case.suite is Suite.REGRESSION
    assert case.fixture == (REPO / "examples" / "shop" / "fixture.sql").resolve()
    assert case.scoring is Scoring.ALL_PASS and case.must_call == ["issue_refund"]
    assert [c.tool for c in case.reference_solution][:2] == ["lookup_order", "issue_refund"]
    assert len(case.parsed_assertions()) == 7 and "critical" in case.tags


def write(tmp_path: Path, text: str) -> Path:
    (tmp_path / "world.sql").write_text("create table t (id integer primary key);")
    path = tmp_path / "case.yaml"
    path.write_text(text)
    return path


GOOD = "id: c\ninstruction: do it\nfixture: world.sql\n"


@pytest.mark.parametrize(
    ("text", "field", "message"),
    [
        ("id: c\ninstruction: do it\n", "fixture", "Field required"),
        (GOOD + "suite: hard\n", "suite", "Input should be 'capability' or 'regression'"),
        (GOOD + "max_steps: -1\n", "max_steps", "greater than 0"),
        (GOOD + "colour: red\n", "colour", "not a case field; the fields: allowed_tables"),
        (GOOD + "asert: []\n", "asert", "not a case field; did you mean 'assert'?"),
        (GOOD + "assert: [refunds.count( == 1]\n", "assert.0", "column"),
        (GOOD + 'assert: ["t.status == 1"]\n', "assert.0", "unknown attribute .status"),
        (
            GOOD + "reference_solution: [{tool: x, argz: {}}]\n",
            "reference_solution.0.argz",
            "Extra",
        ),
        ("id: c\ninstruction: do it\nfixture: world.txt\n", "fixture", "must end in one of .sql"),
        ("id: c\ninstruction: do it\nfixture: gone.sql\n", "fixture", "gone.sql does not exist"),
    ],
)
def test_malformed_cases_name_file_and_field(
    tmp_path: Path, text: str, field: str, message: str
) -> None:
    path = write(tmp_path, text)
    with pytest.raises(CaseFileError) as info:
        load_case(path)
    assert info.value.field == field
    assert str(info.value).startswith(f"{path} (field {field}): ")
    assert message in str(info.value) and "\n" not in str(info.value)


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("id: [unclosed\n", "at line 2, column 1"),
        ("- just\n- a list\n", "must be a mapping of fields"),
    ],
)
def test_unreadable_case_files(tmp_path: Path, text: str, message: str) -> None:
    path = write(tmp_path, text)
    with pytest.raises(CaseFileError, match=message):
        load_case(path)
    with pytest.raises(CaseFileError, match="no such case file"):
        load_case(tmp_path / "missing.yaml")
