"""`grade`, `check-cases`, `gate`, `suite-health` and `run` print recorded data escaped (issue 29).

A case id or a grade's evidence can hold ``\\x1b]0;TITLE\\x07\\x1b[2J`` (a store written by
an import or an older version; a tool name a grader quotes): each command prints it as the
characters that spell it, on stdout and stderr alike, with the rest of its line unchanged.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import yaml

from examples.shop import refund_policy
from replay import GradeRecord, Store, Suite, TrialRecord, execute
from replay.graders import Verdict
from replay.stub_llm import StubLLM
from tests.cli.test_terminal_safety import INJECT, SPELLED, hostile_cassette, raw_controls
from tests.helpers import REPO, replay

CASE = REPO / "examples" / "shop" / "cases" / "refund-4812.yaml"
TOOLS = ["--tools", "examples.shop:make_tools"]
EVIL_ID = f"case{INJECT}"


def hostile_case(path: Path) -> Path:
    """The refund case, forbidding the hostile cassette's tool and calling for one never called."""
    data = yaml.safe_load(CASE.read_text())
    data["fixture"] = str(CASE.parent.parent / "fixture.sql")
    data["forbidden_tools"] = [f"lookup{INJECT}order"]
    data["must_call"] = [f"x{INJECT}"]
    path.write_text(json.dumps(data))  # (JSON is YAML, and spells every control character)
    return path


def hostile_store(path: Path, runs: dict[str, Verdict]) -> str:
    """A store of finished runs, each with trials of ``EVIL_ID`` (critical, capability)."""
    store = Store(path)
    for name, verdict in runs.items():
        store.start_run(name, {}, {})
        for idx in range(4):
            grade = GradeRecord("state", verdict, evidence=(f"got {INJECT}",))
            record = TrialRecord(
                case_id=EVIL_ID,
                idx=idx,
                suite=Suite.CAPABILITY,
                verdict=verdict,
                tags=("critical",),
                grades=(grade,),
            )
            store.add_trial(name, record)
        store.finish_run(name)
    return str(path)


def test_grade_prints_quoted_tool_names_escaped(tmp_path: Path) -> None:
    cassette = hostile_cassette(tmp_path / "evil.cassette")
    code, out, err = replay("grade", str(cassette), "--case", str(hostile_case(tmp_path / "c")))
    assert code == 1, out + err
    assert raw_controls(out) == [] and raw_controls(err) == []
    assert f"    forbidden tool lookup{SPELLED}order was called\n" in out
    assert f"    x{SPELLED} was never called (must_call)\n" in out
    assert out.startswith("refund-4812: fail\n  rule: fail\n")  # the rest as it was


def test_check_cases_prints_evidence_escaped(tmp_path: Path) -> None:
    case = hostile_case(tmp_path / "c.yaml")
    code, out, err = replay("check-cases", str(case), *TOOLS)
    assert code == 1, out + err
    assert raw_controls(out) == [] and raw_controls(err) == []
    assert f"  rule: x{SPELLED} was never called (must_call)\n" in out
    assert out.startswith("refund-4812: fail\n")
    assert out.endswith("1 case(s) fail their own reference solution\n")


def test_gate_prints_case_ids_escaped(tmp_path: Path) -> None:
    store = hostile_store(tmp_path / "r.db", {"cand": Verdict.FAIL})
    args = ["gate", "--candidate", "cand", "--max-failing-critical", "0", "--store", store]
    code, out, err = replay(*args)
    assert code == 1, out + err
    assert raw_controls(out) == [] and raw_controls(err) == []
    assert f"FAIL critical cases with a trial not passing 1 <= 0 (failing: case{SPELLED})\n" in out
    assert out.endswith("gate does not hold: cand on its own (no baseline)\n")


def test_gate_prints_unpaired_case_ids_in_its_notes_escaped(tmp_path: Path) -> None:
    store = hostile_store(tmp_path / "r.db", {"base": Verdict.PASS})
    Store(Path(store)).start_run("cand", {}, {})
    other = TrialRecord(case_id="other", idx=0, suite=Suite.CAPABILITY, verdict=Verdict.PASS)
    Store(Path(store)).add_trial("cand", other)
    Store(Path(store)).finish_run("cand")
    args = ["gate", "--baseline", "base", "--candidate", "cand", "--min-pass1", "0"]
    code, out, err = replay(*args, "--store", store)
    assert raw_controls(out) == [] and raw_controls(err) == [], (code, out, err)
    assert f"in base only: case{SPELLED}" in out


def test_suite_health_prints_case_ids_escaped(tmp_path: Path) -> None:
    runs = {"r1": Verdict.FAIL, "r2": Verdict.FAIL, "r3": Verdict.FAIL}
    code, out, err = replay("suite-health", "--store", hostile_store(tmp_path / "r.db", runs))
    assert code == 0, err
    assert raw_controls(out) == [] and raw_controls(err) == []
    assert f"never-passes: case{SPELLED}: 0 of 12 trials passed (runs r1, r2, r3)" in out


def test_graduate_prints_the_new_path_escaped(tmp_path: Path) -> None:
    capability = tmp_path / f"cases{INJECT}" / "capability"
    capability.mkdir(parents=True)
    case = capability / "refund.yaml"
    case.write_text(CASE.read_text().replace("suite: regression", "suite: capability"))
    code, out, err = replay("graduate", str(case))
    assert code == 0, err
    assert raw_controls(out) == []
    assert out == f"graduated: {tmp_path}/cases{SPELLED}/regression/refund.yaml\n"


@pytest.mark.parametrize("what", ["progress", "warning"])
def test_run_prints_progress_and_warnings_escaped(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, what: str
) -> None:
    """A progress line names the case and why it failed; a warning may quote anything."""
    case = tmp_path / "c.yaml"
    data = yaml.safe_load(CASE.read_text())
    data["fixture"] = str(CASE.parent.parent / "fixture.sql")
    data["must_call"] = [f"x{INJECT}"]  # (the progress line quotes why the trial failed)
    case.write_text(json.dumps(data))
    if what == "warning":

        def warns(*args: object, on_warning: object, **kwargs: object) -> None:
            assert callable(on_warning)
            on_warning(f"odd cassette {INJECT}")
            execute(*args, on_warning=on_warning, **kwargs)  # type: ignore[arg-type]

        monkeypatch.setattr("replay._cli.run.execute", warns)
    store = str(tmp_path / "r.db")
    agent = ["--agent", "examples.shop:agent", *TOOLS]
    with StubLLM(refund_policy()) as llm:
        args = ["--run", "r", "--store", store, "--llm-url", llm.openai_base_url, *agent]
        code, out, err = replay("run", str(case), *args)
    assert code == 1, out + err
    assert raw_controls(out) == [] and raw_controls(err) == []
    if what == "warning":
        assert f"warning: odd cassette {SPELLED}\n" in err
    else:
        assert "[1/1] refund-4812 #0 fail" in err and "x\\x1b]0;TITLE\\x07\\x1b[2J" in err
