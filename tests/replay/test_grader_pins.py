"""A case gives its graders arguments; the run's pins name each grader, its version, its args."""

from __future__ import annotations

from pathlib import Path

import pytest

from replay import CaseFileError, RunSpec, Store, execute, load_case
from tests.helpers import REPO

SHOP = REPO / "examples" / "shop"
GRADER = "tests.replay.graders_with_args:answer_mentions"


def _case(tmp_path: Path, graders: str) -> Path:
    text = (SHOP / "cases" / "refund-4812.yaml").read_text()
    text = text.replace("fixture: ../fixture.sql", f"fixture: {SHOP / 'fixture.sql'}")
    path = tmp_path / "refund.yaml"
    path.write_text(text + f"graders: {graders}\n")
    return path


def test_a_grader_gets_the_case_arguments_and_the_pins_record_them(tmp_path: Path) -> None:
    graders = (
        f"[{{name: '{GRADER}', args: {{word: refunded}}}}, "
        f"{{name: '{GRADER}', args: {{word: zebra}}}}]"
    )
    case = _case(tmp_path, graders)
    store = Store(tmp_path / "r.db")
    spec = RunSpec(name="rev", cases=[str(case)], mode="review", cassettes=str(REPO / "cassettes"))
    execute(spec, store)
    (trial,) = store.trials("rev")
    grades = {(g.grader, g.evidence): g.verdict for g in trial.grades}
    assert grades[("answer_mentions", ("'refunded'",))] == "pass"  # the golden answer says so
    assert grades[("answer_mentions", ("'zebra'",))] == "fail"
    pins = store.run("rev").pins  # type: ignore[union-attr]
    assert pins["graders"]["answer_mentions"] == {
        "version": "3",
        "args": {"refund-4812": [{"word": "refunded"}, {"word": "zebra"}]},
    }
    assert pins["graders"]["state"] == {"version": "1"}
    assert set(pins["graders"]) >= {"replay", "rule", "state", "matches_reference"}


def test_a_grader_entry_with_an_unknown_field_is_a_case_file_error(tmp_path: Path) -> None:
    case = _case(tmp_path, f"[{{name: '{GRADER}', arguments: {{word: x}}}}]")
    with pytest.raises(CaseFileError, match="arguments"):
        load_case(case)
