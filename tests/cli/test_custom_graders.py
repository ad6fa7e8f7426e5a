"""A grader a user registers runs in review, offline and sandbox, and shows in the report."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from examples.shop import refund_policy
from replay.stub_llm import StubLLM
from tests.helpers import REPO, replay

SHOP = REPO / "examples" / "shop"
AGENT = ["--agent", "examples.shop:agent", "--tools", "examples.shop:make_tools"]


@pytest.fixture
def case(tmp_path: Path) -> Path:
    """The demo case naming a grader of its own (by MODULE:NAME), and one that raises."""
    text = (SHOP / "cases" / "refund-4812.yaml").read_text()
    text = text.replace("fixture: ../fixture.sql", f"fixture: {SHOP / 'fixture.sql'}")
    path = tmp_path / "refund.yaml"
    graders = "tests.cli.custom_graders:refund_rows, tests.cli.custom_graders:explodes"
    path.write_text(text + f"graders: [{graders}]\n")
    return path


def _grades(store: str, run: str) -> dict[str, dict[str, int]]:
    code, out, err = replay("report", run, "--store", store, "--json")
    assert code == 0, err
    (case,) = json.loads(out)["cases"]
    graders: dict[str, dict[str, int]] = case["graders"]
    return graders


def test_a_registered_grader_runs_in_every_mode_and_shows_in_the_report(
    case: Path, tmp_path: Path
) -> None:
    store = str(tmp_path / "results.db")
    extra = ["--grader", "tests.cli.custom_graders:says_sorry"]
    with StubLLM(refund_policy()) as llm:
        code, _, err = replay(
            "run", str(case), "--run", "sb", "--store", store, *AGENT,
            "--llm-url", llm.openai_base_url, *extra,
        )  # fmt: skip
    assert code == 3, err  # a grader raised: each trial an error no one is to blame for
    cassettes = str(tmp_path / "cassettes" / "sb")
    for mode, run in (("offline", "off"), ("review", "rev")):
        code, _, err = replay(
            "run", str(case), "--run", run, "--mode", mode, "--store", store,
            "--cassettes", cassettes, *AGENT, *extra,
        )  # fmt: skip
        assert code == 3, err
    for run in ("sb", "off", "rev"):
        grades = _grades(store, run)
        assert grades["refund_rows"] == {"pass": 1}, run  # the case's own grader
        assert grades["says_sorry"] == {"fail": 1}, run  # the run's
        assert grades["explodes"] == {"error": 1}, run  # raised: an error grade, the run goes on
        assert {"rule", "state"} <= set(grades)  # (replay grades only a trial with misses)


def test_a_grader_nobody_registered_is_refused_before_any_trial_runs(tmp_path: Path) -> None:
    store = str(tmp_path / "results.db")
    golden = str(REPO / "cassettes")
    for grader, message in (
        ("no_such_grader", "no grader named 'no_such_grader' is registered"),
        ("no_such.module:x", "cannot import 'no_such.module' (ModuleNotFoundError"),
    ):
        code, _, err = replay(
            "run", str(SHOP / "cases" / "refund-4812.yaml"), "--run", "r", "--mode", "review",
            "--store", store, "--cassettes", golden, "--grader", grader,
        )  # fmt: skip
        assert code == 2 and message in err and "Traceback" not in err


def test_on_a_worker_an_unregistered_grader_is_an_error_grade() -> None:
    from replay.graders import Verdict, run_graders

    (grade,) = run_graders(None, ["no_such_grader"])  # type: ignore[arg-type]
    assert grade.verdict is Verdict.ERROR
    assert grade.evidence[0].startswith("no grader named 'no_such_grader' is registered")


def test_a_misspelled_grader_in_a_case_is_bad_input_for_grade_and_check_cases(
    tmp_path: Path,
) -> None:
    """Not a trial that could not be judged (exit 3): the case's own error, exit 2."""
    source = SHOP / "cases" / "refund-4812.yaml"
    text = source.read_text().replace("../fixture.sql", str(SHOP / "fixture.sql"))
    case = tmp_path / "typo.yaml"
    case.write_text(text + "graders: [no_such_grader]\n")
    golden = str(REPO / "cassettes" / "refund-4812.cassette")
    for args in (("grade", golden, "--case", str(case)),
                 ("check-cases", str(case), "--tools", "examples.shop:make_tools")):  # fmt: skip
        code, _, err = replay(*args)
        assert code == 2, (args, err)
        assert err.startswith(f"error: {case}: no grader named 'no_such_grader' is registered")
        assert err.count("\n") == 1
