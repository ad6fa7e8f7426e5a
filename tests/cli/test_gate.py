"""`replay gate`: exit 0 when the candidate holds, 1 when not, 2 when runs are not comparable."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from examples.shop import refund_policy
from replay.stub_llm import StubLLM
from tests.helpers import REPO, replay

CASE = REPO / "examples" / "shop" / "cases" / "refund-4812.yaml"
AGENT = ["--agent", "examples.shop:agent", "--tools", "examples.shop:make_tools"]


@pytest.fixture(scope="module")
def store(tmp_path_factory: pytest.TempPathFactory) -> str:
    """A stable baseline, an equal run, a flakier candidate, and a run on another fixture."""
    directory = tmp_path_factory.mktemp("gate")
    path = str(directory / "r.db")
    for name, seed, flake in (("base", 0, 0.0), ("same", 0, 0.0), ("flaky", 2, 0.5)):
        with StubLLM(refund_policy(), seed=seed, flake_rate=flake) as llm:
            code, _, err = replay(
                "run",
                str(CASE),
                "--run",
                name,
                "-k",
                "8",
                "--llm-url",
                llm.openai_base_url,
                "--store",
                path,
                *AGENT,
                "--measure",  # the flaky run fails trials: the gate reads its numbers
            )
            assert code == 0, err
    other = directory / "case"
    other.mkdir()
    (other / "fixture.sql").write_text(
        (REPO / "examples" / "shop" / "fixture.sql")
        .read_text()
        .replace("'TEE-M', 'T-shirt, medium', 62", "'TEE-M', 'T-shirt, medium', 61")
    )
    (other / "refund-4812.yaml").write_text(
        CASE.read_text().replace("../fixture.sql", "fixture.sql")
    )
    with StubLLM(refund_policy()) as llm:
        code, _, err = replay(
            "run",
            str(other / "refund-4812.yaml"),
            "--run",
            "moved",
            "-k",
            "8",
            "--llm-url",
            llm.openai_base_url,
            "--store",
            path,
            *AGENT,
        )
        assert code == 0, err
    return path


def test_a_flakier_candidate_fails_the_gate_naming_the_case(store: str, tmp_path: Path) -> None:
    junit = tmp_path / "junit.xml"
    code, out, _ = replay(
        "gate",
        "--baseline",
        "base",
        "--candidate",
        "flaky",
        "--store",
        store,
        "--min-pass1",
        "0.9",
        "--max-drop",
        "0.05",
        "--junit",
        str(junit),
    )
    assert code == 1
    assert "FAIL suite pass^1" in out and "FAIL pass^1 drop" in out
    assert "FAIL no critical case newly fails (newly failing: refund-4812)" in out
    assert "cases that dropped: refund-4812" in out
    assert out.strip().endswith("gate does not hold: flaky against base")
    cases = {c.name: c for c in _testcases(junit)}
    assert set(cases) == {
        "refund-4812",
        "suite pass^1 >= 0.9",
        "pass^1 drop <= 0.05",
        "no critical case newly fails",
    }
    assert all(not case.is_passed for case in cases.values())


def _testcases(path: Path) -> list[Any]:
    """The testcases as a JUnit-reading library sees them, counts checked as CI reads them."""
    junitparser = pytest.importorskip("junitparser", reason="the dev extra installs junitparser")
    xml = junitparser.JUnitXml.fromfile(str(path))
    suites = list(xml)
    for holder, cases in [(xml, [c for s in suites for c in s]), *((s, list(s)) for s in suites)]:
        failing = [c for c in cases if not c.is_passed]
        assert (holder.tests, holder.failures, holder.errors) == (len(cases), len(failing), 0)
    return [c for s in suites for c in s]


def test_two_equal_runs_pass_the_gate(store: str, tmp_path: Path) -> None:
    junit = tmp_path / "junit.xml"
    code, out, _ = replay(
        "gate",
        "--junit",
        str(junit),
        "--baseline",
        "base",
        "--candidate",
        "same",
        "--store",
        store,
        "--min-pass1",
        "0.9",
        "--min-pass-k",
        "8=1.0",
        "--max-drop",
        "0",
        "--max-unsupported",
        "0",
    )
    assert code == 0, out
    assert "ok   suite pass^8 1.000 >= 1.0" in out
    assert out.strip().endswith("gate holds: same against base")
    cases = _testcases(junit)
    assert len(cases) == 6 and all(case.is_passed for case in cases)  # the case, 5 thresholds


def test_runs_on_different_fixtures_are_refused_naming_the_pin(store: str) -> None:
    code, out, err = replay("gate", "--baseline", "base", "--candidate", "moved", "--store", store)
    assert code == 2 and out == ""
    assert "differ in more than the variable under test: fixtures (refund-4812: " in err
    assert err.count("\n") == 1


def test_without_a_baseline_absolute_thresholds_hold_a_first_run(
    store: str, tmp_path: Path
) -> None:
    junit = tmp_path / "junit.xml"
    args = ["gate", "--candidate", "base", "--store", store, "--junit", str(junit)]
    code, out, _ = replay(*args, "--min-pass1", "0.9", "--max-failing-critical", "0")
    assert code == 0, out
    assert out.splitlines() == [
        "ok   suite pass^1 1.000 >= 0.9",
        "ok   critical cases with a trial not passing 0 <= 0",
        "gate holds: base on its own (no baseline)",
    ]
    cases = {c.name: c for c in _testcases(junit)}
    assert set(cases) == {
        "refund-4812",
        "suite pass^1 >= 0.9",
        "critical cases with a trial not passing <= 0",
    }
    assert all(case.is_passed for case in cases.values())


def test_without_a_baseline_a_failing_candidate_fails_each_check_and_case(
    store: str, tmp_path: Path
) -> None:
    junit = tmp_path / "junit.xml"
    code, out, _ = replay(
        "gate", "--candidate", "flaky", "--store", store, "--junit", str(junit),
        "--min-pass1", "0.9", "--min-pass-k", "8=0.5", "--max-failing-critical", "0",
        "--max-unsupported", "1",
    )  # fmt: skip
    assert code == 1
    assert "FAIL critical cases with a trial not passing 1 <= 0 (failing: refund-4812)" in out
    assert "ok   unsupported + error share" in out
    assert out.strip().endswith("gate does not hold: flaky on its own (no baseline)")
    cases = {c.name: c for c in _testcases(junit)}  # (the counts are checked there too)
    assert len(cases) == 5
    assert [n for n, c in cases.items() if c.is_passed] == ["unsupported + error share <= 1.0"]
    (failure,) = cases["refund-4812"].result
    assert failure.message.startswith("refund-4812: ") and "trials did not pass" in failure.message


def test_the_api_gate_takes_no_baseline(store: str) -> None:
    from replay import Store, Thresholds, gate

    result = gate(Store(store), None, "base", Thresholds(min_pass1=0.9))
    assert result.holds and result.changes == []
    assert [c.case_id for c in result.cases] == ["refund-4812"]
    assert not gate(Store(store), None, "flaky", Thresholds(min_pass1=0.9)).holds


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--max-drop", "0.05"], "--max-drop is a fall from a baseline: give --baseline RUN too"),
        (
            [],
            "a gate without --baseline needs a threshold on the candidate: give --min-pass1, "
            "--min-pass-k K=VALUE, --max-unsupported or --max-failing-critical",
        ),
        (["--critical-tag", "vip", "--min-pass1", "0.5"], "--critical-tag: a case newly failing"),
        (["--baseline", "base", "--max-failing-critical", "-1"], "Invalid value for"),
    ],
)
def test_thresholds_a_gate_without_a_baseline_cannot_check_are_one_line_errors(
    store: str, args: list[str], message: str
) -> None:
    code, out, err = replay("gate", "--candidate", "base", "--store", store, *args)
    assert code == 2 and out == "" and err.count("\n") == 1
    assert message in err, err
