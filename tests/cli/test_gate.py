"""`replay gate`: exit 0 holds, 1 does not, 3 cannot decide, 2 runs that are not comparable."""

from __future__ import annotations

import re
import sqlite3
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest

from examples.shop import refund_policy
from replay.agents import unavailable
from replay.graders import Cause, Verdict
from replay.stub_llm import StubLLM
from tests.helpers import REPO, replay

CASE = REPO / "examples" / "shop" / "cases" / "refund-4812.yaml"
# In this process, unwalled: what is tested here is what is made of the runs (the walls
# are tests/e2e's).
AGENT = ["--agent", "examples.shop:agent", "--tools", "examples.shop:make_tools",
         "--isolation", "none"]  # fmt: skip
pytestmark = pytest.mark.xdist_group("gate")  # one worker builds the store, once


@pytest.fixture(scope="module")
def store(tmp_path_factory: pytest.TempPathFactory) -> str:
    """A stable baseline, an equal run, a flakier candidate, a crashing agent's run, and a
    run on another fixture."""
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
    with StubLLM(refund_policy()) as llm:
        code, _, err = replay(
            "run", str(CASE), "--run", "crash", "-k", "2", "--llm-url", llm.openai_base_url,
            "--store", path, "--agent", "tests.cli.exit_helpers:crash", *AGENT[2:], "--measure",
        )  # fmt: skip
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
    assert "FAIL suite pass^1" in out and "FAIL pass^1 drop 1.000 (1.000 -> 0.000)" in out
    assert "over 1 case: a real drop, not shown within 0.05" in out
    assert "FAIL no critical case newly fails (newly failing: refund-4812)" in out
    assert "cases worse beyond noise (FDR 0.1): refund-4812" in out
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
    """The testcases as a JUnit-reading library sees them, counts checked as CI reads them.

    And the attributes the common schemas ask for: Jenkins' junit-10.xsd allows only
    name, time, tests, failures and errors on ``testsuites``; Ant's wants a time on each
    testsuite and testcase, and a timestamp and hostname on each testsuite.
    """
    junitparser = pytest.importorskip("junitparser", reason="the dev extra installs junitparser")
    xml = junitparser.JUnitXml.fromfile(str(path))
    suites = list(xml)
    for holder, cases in [(xml, [c for s in suites for c in s]), *((s, list(s)) for s in suites)]:
        failing = [c for c in cases if not c.is_passed]
        assert (holder.tests, holder.failures, holder.errors) == (len(cases), len(failing), 0)
    assert set(xml._elem.attrib) <= {"name", "time", "tests", "failures", "errors"}
    for suite in suites:
        assert {"name", "tests", "failures", "errors", "time", "timestamp", "hostname"} <= set(
            suite._elem.attrib
        )
        assert re.fullmatch(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d", suite.timestamp)
        assert all(case._elem.get("time") == "0" for case in suite)
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
        "0.5",
        "--max-unsupported",
        "0",
    )
    assert code == 0, out
    assert "ok   suite pass^8 1.000 >= 1.0" in out
    # One case of 8 trials in each run: its own two samples bound the drop.
    assert "ok   pass^1 drop 0.000 (1.000 -> 1.000), 95% interval [-0.324, 0.324]" in out
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
    (failure,) = cases["refund-4812"].result  # a failing check names it
    assert failure.message == "refund-4812 fails: critical cases with a trial not passing <= 0"
    assert cases["refund-4812"].system_out.startswith("verdicts ")


def test_a_candidate_whose_agent_crashes_on_every_trial_newly_fails(
    store: str, tmp_path: Path
) -> None:
    junit = tmp_path / "junit.xml"
    args = ["--store", store, "--junit", str(junit)]
    code, out, _ = replay(
        "gate", "--baseline", "base", "--candidate", "crash", "--vary", "agent", *args
    )
    assert code == 1, out
    assert out.splitlines()[0] == "FAIL no critical case newly fails (newly failing: refund-4812)"
    cases = {c.name: c for c in _testcases(junit)}
    assert (
        not cases["refund-4812"].is_passed and not cases["no critical case newly fails"].is_passed
    )
    (failure,) = cases["refund-4812"].result
    assert failure.message == "refund-4812 fails: no critical case newly fails"
    assert failure.text.startswith("verdicts 2 error (baseline: 8 pass); pass^1 1.000 -> -; read: ")


def test_a_case_only_the_candidate_has_newly_fails_when_it_fails(
    store: str, tmp_path: Path
) -> None:
    from replay import Store

    results = Store(store)
    base = results.run("base")
    assert base is not None
    results.start_run("plus", dict(base.spec), dict(base.pins))
    for trial in results.trials("base"):
        row = replace(trial, grades=())
        results.add_trial("plus", row)
        results.add_trial("plus", replace(row, case_id="new-fail", verdict=Verdict.FAIL))
        limit = replace(row, case_id="new-limit", verdict=Verdict.ERROR, cause=Cause.LIMIT)
        results.add_trial("plus", limit)  # ran past a limit: the agent's doing
        results.add_trial("plus", replace(limit, case_id="new-server", cause=Cause.SERVER))
        results.add_trial(
            "plus", replace(row, case_id="new-unsupported", verdict=Verdict.UNSUPPORTED)
        )
    results.finish_run("plus")
    junit = tmp_path / "junit.xml"
    args = ["--store", store, "--junit", str(junit)]
    code, out, _ = replay("gate", "--baseline", "base", "--candidate", "plus", *args)
    assert code == 1, out
    assert "FAIL no critical case newly fails (newly failing: new-fail, new-limit)" in out
    cases = {c.name for c in _testcases(junit) if not c.is_passed}
    assert cases == {"new-fail", "new-limit", "no critical case newly fails"}


def test_junit_fails_exactly_when_the_gate_does_not_hold(store: str, tmp_path: Path) -> None:
    """A gate that holds writes no failure: cases pass, their verdicts in system-out."""
    junit = tmp_path / "junit.xml"
    args = ["--candidate", "flaky", "--store", store, "--junit", str(junit)]
    code, out, _ = replay("gate", *args, "--min-pass1", "0", "--max-unsupported", "1")
    assert code == 0, out  # without a baseline: the case has failing trials, no check names it
    (case, *checks) = _testcases(junit)
    assert case.name == "refund-4812" and case.is_passed and all(c.is_passed for c in checks)
    assert re.fullmatch(
        r"verdicts (\d pass, )?\d fail; pass\^1 0\.\d+; read: replay show \S+", case.system_out
    )
    code, out, _ = replay("gate", *args, "--baseline", "base", "--critical-tag", "vip")
    assert code == 0, out  # with one: its pass rate fell, and no threshold says it may not
    assert "ok   no vip case newly fails (0 vip cases in the run)" in out
    assert "cases worse beyond noise (FDR 0.1): refund-4812" in out
    (case, check) = _testcases(junit)
    assert case.is_passed and check.is_passed
    assert re.match(
        r"verdicts (\d pass, )?\d fail \(baseline: 8 pass\); pass\^1 1\.000 -> 0\.", case.system_out
    )


def test_with_no_critical_case_the_critical_cap_holds_saying_so(store: str) -> None:
    args = ["--candidate", "base", "--store", store, "--critical-tag", "vip"]
    code, out, _ = replay("gate", *args, "--max-failing-critical", "0")
    assert code == 0, out
    assert "ok   vip cases with a trial not passing 0 <= 0 (0 vip cases in the run)" in out


def test_a_run_not_finished_or_without_trials_is_a_one_line_error(store: str) -> None:
    from replay import Store

    results = Store(store)
    base = results.run("base")
    assert base is not None
    results.start_run("half", dict(base.spec), dict(base.pins))
    (first, *_) = results.trials("base")
    results.add_trial("half", first)
    results.start_run("empty", dict(base.spec), dict(base.pins))
    results.finish_run("empty")
    for args, message in [
        (["--candidate", "half", "--min-pass1", "0"], "run 'half' is not finished (1 of 8 trials)"),
        (
            ["--baseline", "half", "--candidate", "base"],
            "run 'half' is not finished (1 of 8 trials)",
        ),
        (
            ["--baseline", "base", "--candidate", "half"],
            "run 'half' is not finished (1 of 8 trials)",
        ),
        (["--candidate", "empty", "--min-pass1", "0"], "run 'empty' has no trials"),
        (["--baseline", "empty", "--candidate", "base"], "run 'empty' has no trials"),
    ]:
        code, out, err = replay("gate", *args, "--store", store)
        assert code == 2 and out == "" and err.count("\n") == 1, (args, out, err)
        assert message in err, err
        if "half" in message:
            assert f"finish it with `replay run --resume --run half --store {store}`" in err


def test_a_drop_the_runs_cannot_settle_exits_3_saying_what_would(
    store: str, tmp_path: Path
) -> None:
    """Two equal runs of one case of 8 trials cannot show a drop within 0.1: exit 3, not 1."""
    junit = tmp_path / "junit.xml"
    args = ["--baseline", "base", "--candidate", "same", "--store", store, "--junit", str(junit)]
    code, out, _ = replay("gate", *args, "--max-drop", "0.1")
    assert code == 3, out
    line = out.splitlines()[0]
    assert line.startswith("???? pass^1 drop 0.000 (1.000 -> 1.000), 95% interval [-0.324, 0.324]")
    assert (
        "cannot decide: these runs can detect a drop of 46 points or more; --max-drop 0.1 " in line
    )
    assert re.search(r"needs about \d+ cases x 8 trials", line)
    assert out.strip().endswith("gate cannot decide: same against base")
    cases = {c.name: c for c in _testcases(junit)}
    (failure,) = cases["pass^1 drop <= 0.1"].result  # the JUnit check says the same
    assert failure.message == line[5:]
    code, out, _ = replay("gate", *args, "--max-drop", "0.1", "--allow-underpowered")
    assert code == 1 and "FAIL pass^1 drop" in out and "not shown within 0.1" in out
    code, out, _ = replay("gate", *args, "--max-drop", "0")
    assert code == 3 and "no number of cases shows a drop of at most 0" in out
    code, _, err = replay("gate", *args, "--max-drop", "0.1", "--confidence", "1.5")
    assert code == 2 and "--confidence" in err and err.count("\n") == 1


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


@pytest.mark.parametrize("command", ["gate", "report"])
def test_a_report_cut_off_while_written_leaves_the_previous_one_whole(
    store: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, command: str
) -> None:
    """Killed between writing and committing the file, a CI reading it sees the last whole one."""
    path = tmp_path / ("junit.xml" if command == "gate" else "report.html")
    args = (
        ["gate", "--candidate", "flaky", "--min-pass1", "0", "--max-unsupported", "1",
         "--junit", str(path)]
        if command == "gate"
        else ["report", "flaky", "--html", str(path)]
    )  # fmt: skip
    replay(*args, "--store", store)
    before = path.read_bytes()
    assert before.rstrip().endswith(b"</testsuites>" if command == "gate" else b"</html>")

    def killed(fd: int) -> None:  # the process dies after writing, before the file is whole
        raise KeyboardInterrupt

    monkeypatch.setattr("os.fsync", killed)
    assert replay(*args, "--store", store)[0] != 0  # (click says "Aborted!")
    assert path.read_bytes() == before
    assert [p.name for p in tmp_path.iterdir()] == [path.name]  # no part left behind


def test_walls_are_noted_not_blocking_unless_strict(store: str, tmp_path: Path) -> None:
    """Installing an extra turns ``--isolation auto`` walls on: the runs still compare."""
    if unavailable() is not None:
        pytest.skip(f"isolation is unavailable here: {unavailable()}")
    copy = str(tmp_path / "r.db")
    source, target = sqlite3.connect(store), sqlite3.connect(copy)
    source.backup(target)  # (the module's store stays as it was for the other tests)
    source.close()
    target.close()
    with StubLLM(refund_policy()) as llm:
        code, out, err = replay(
            "run", str(CASE), "--run", "walled", "-k", "8", "--llm-url", llm.openai_base_url,
            "--store", copy, *AGENT[:4], "--measure",
        )  # fmt: skip
    assert code == 0, err
    assert "isolation process (auto: each agent walled in)" in out  # what auto chose
    code, out, err = replay("gate", "--baseline", "base", "--candidate", "walled", "--store", copy)
    assert code == 0, err
    assert "the runs differ in isolation ('none' -> 'process'): noted, not blocking" in out
    code, _, err = replay(
        "gate", "--baseline", "base", "--candidate", "walled", "--store", copy, "--strict-pins"
    )
    assert code == 2 and "differ in more than the variable under test: isolation" in err


def test_a_baseline_pinned_by_the_former_fixture_hash_is_refused_with_what_to_do() -> None:
    """Runs recorded before fixture hash v2 pin 16-hex v1 hashes: not comparable with v2
    (the fixture may have changed too): refused, saying to run the baseline again."""
    from replay.results._pins import comparable

    v2 = "v2:00112233445566aa"
    old = {"agent": "a", "fixtures": {"c1": "0123456789abcdef", "c2": v2}}
    new = {"agent": "a", "fixtures": {"c1": "v2:0a1b2c3d4e5f6a7b", "c2": v2}}
    refused = comparable(old, new, (), strict=False)
    assert isinstance(refused, str) and "run the baseline again with this version" in refused
    changed = {"agent": "a", "fixtures": {"c1": "v2:0a1b2c3d4e5f6a7b", "c2": "v2:ffff"}}
    refused = comparable(new, changed, (), strict=False)
    assert isinstance(refused, str) and "c2: 'v2:00112233445566aa' -> 'v2:ffff'" in refused
