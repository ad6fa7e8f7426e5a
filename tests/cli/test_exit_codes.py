"""How `replay run`, `grade` and `check-cases` exit (0 pass, 1 failed, 3 incomplete).

And what `replay run` prints off a terminal: a line per trial on stderr, a summary (or
`--json`) on stdout.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from examples.shop import refund_policy
from examples.shop.agent import SYSTEM_PROMPT
from examples.shop.policy import PromptVersionPolicy
from recorder import read_cassette, write_cassette
from replay import ExitCode, RunSpec, Store, execute
from replay.stub_llm import StubLLM
from tests.helpers import REPO, replay

SHOP = REPO / "examples" / "shop"
CASE = str(SHOP / "cases" / "refund-4812.yaml")
GOLDEN = REPO / "cassettes" / "refund-4812.cassette"
TOOLS = ["--tools", "examples.shop:make_tools"]
AGENT = ["--agent", "examples.shop:agent", *TOOLS]
NO_LLM = ["--llm-url", "http://127.0.0.1:9/v1", "--no-llm-check", "--isolation", "none"]
IDLE = ["--agent", "tests.cli.exit_helpers:idle", *TOOLS, *NO_LLM]
CRASH = ["--agent", "tests.cli.exit_helpers:crash", *TOOLS, *NO_LLM]
MUST_CALL = "fail: assertion failed (rule: issue_refund was never called (must_call))"


@pytest.fixture
def store(tmp_path: Path) -> str:
    return str(tmp_path / "results.db")


def _case(tmp_path: Path, name: str, extra: str = "", case_id: str | None = None) -> str:
    """The demo case, its fixture by absolute path, with ``extra`` YAML and another id."""
    text = Path(CASE).read_text().replace("../fixture.sql", str(SHOP / "fixture.sql"))
    if case_id is not None:
        text = text.replace("id: refund-4812", f"id: {case_id}")
    path = tmp_path / name
    path.write_text(text + extra)
    return str(path)


def test_the_rule_of_verdicts_and_causes() -> None:
    of = ExitCode.of_verdicts
    assert of([]) == of([("pass", None)] * 3) == ExitCode.OK
    assert of([("pass", None), ("fail", None)]) == ExitCode.FAILED
    assert of([("error", "agent")]) == of([("error", "limit")]) == ExitCode.FAILED
    for cause in ("harness", "server", "user", None):
        assert of([("pass", None), ("error", cause)]) == ExitCode.INCOMPLETE, cause
    assert of([("unsupported", None)]) == of([("unknown", None)]) == ExitCode.INCOMPLETE
    assert of([("unknown", None), ("fail", None)]) == ExitCode.FAILED  # a failure outweighs
    assert of([("error", None)], grader_errors_fail=True) == ExitCode.FAILED


def test_a_run_exits_by_its_verdicts_unless_it_is_a_measurement(store: str) -> None:
    with StubLLM(refund_policy()) as llm:
        url = ["--llm-url", llm.openai_base_url]
        code, out, err = replay(
            "run", CASE, "--run", "good", "-k", "2", "--store", store, *url, *AGENT
        )
    assert code == ExitCode.OK, err
    assert "exit 0 (OK): every trial passes" in out
    code, _, _ = replay("run", CASE, "--run", "idle", "--store", store, *IDLE)
    assert code == ExitCode.FAILED  # verdict fail
    code, _, _ = replay("run", CASE, "--run", "crash", "--store", store, *CRASH)
    assert code == ExitCode.FAILED  # an error of cause agent
    assert Store(store).trials("crash")[0].cause == "agent"
    code, out, _ = replay("run", CASE, "--run", "measured", "--store", store, *IDLE, "--measure")
    assert code == ExitCode.OK
    assert "--measure: exit 0 (the verdicts alone: 1 FAILED)" in out
    # Offline with a changed prompt: one call the recording cannot answer, nothing failed.
    with StubLLM(PromptVersionPolicy()) as llm:
        offline = [
            "--mode", "offline", "--cassettes", str(GOLDEN.parent), "--llm", "live",
            "--llm-url", llm.openai_base_url, "--set", f"system_prompt={SYSTEM_PROMPT} (prompt v2)",
            "--store", store, *AGENT,
        ]  # fmt: skip
        code, out, _ = replay("run", CASE, "--run", "v2", *offline)
        assert code == ExitCode.INCOMPLETE
        assert [t.verdict for t in Store(store).trials("v2")] == ["unsupported"]
        assert "exit 3 (INCOMPLETE): nothing failed, but some trials could not be judged" in out
        code, _, _ = replay("run", CASE, "--run", "v2-measured", *offline, "--measure")
        assert code == ExitCode.OK


def test_off_a_terminal_each_trial_is_a_line_and_a_summary_ends_the_run(
    store: str, tmp_path: Path
) -> None:
    long_id = "refund-4812-for-a-customer-whose-case-id-is-longer-than-any-table-column-x"
    case = _case(tmp_path, "long.yaml", case_id=long_id)
    code, out, err = replay("run", case, "--run", "idle", "-k", "2", "--store", store, *IDLE)
    assert code == ExitCode.FAILED
    assert err.splitlines() == [
        f"[1/2] {long_id} #0 {MUST_CALL}",
        f"[2/2] {long_id} #1 {MUST_CALL}",
    ]
    path = Store(store).path
    assert out.splitlines() == [
        "run idle: 2 trials of 1 case: 2 fail",
        "suite pass^1 0.000, pass^2 0.000",
        "not passing, by cause: assertion failed 2",
        f"exit 1 (FAILED): {ExitCode.FAILED.meaning}",
        f"stored in {path}; see `replay report idle --store {path}`",
    ]


def test_run_json_is_one_object_on_stdout_with_each_trial(store: str) -> None:
    code, out, err = replay(
        "run", CASE, "--run", "j", "-k", "2", "--store", store, *CRASH, "--json"
    )
    assert code == ExitCode.FAILED
    data = json.loads(out)  # the whole of stdout
    assert (data["run"], data["store"]) == ("j", str(Store(store).path))
    assert data["exit"] == {"code": 1, "name": "FAILED", "meaning": ExitCode.FAILED.meaning}
    assert data["suite"]["verdicts"]["error"] == 2 and data["suite"]["pass_hat"] == {}
    trials = [(t["case"], t["idx"], t["verdict"], t["cause"]) for t in data["trials"]]
    assert trials == [("refund-4812", 0, "error", "agent"), ("refund-4812", 1, "error", "agent")]
    assert all(Path(t["cassette"]).exists() for t in data["trials"])
    lines = err.splitlines()  # progress, on stderr
    assert [line.split(" (")[0] for line in lines] == [
        "[1/2] refund-4812 #0 error: agent error",
        "[2/2] refund-4812 #1 error: agent error",
    ]
    assert "agent: agent raised builtins.RuntimeError: the agent broke on purpose" in lines[0]
    code, out, _ = replay(
        "run", CASE, "--run", "jm", "--store", store, *CRASH, "--json", "--measure"
    )
    assert code == ExitCode.OK and json.loads(out)["exit"]["code"] == 0


def test_a_recording_of_nothing_is_used_with_a_warning(store: str, tmp_path: Path) -> None:
    golden = read_cassette(GOLDEN)
    folder = (tmp_path / "recorded").resolve()
    folder.mkdir()
    empty = folder / "refund-4812-0.cassette"
    write_cassette(empty, golden.header, [], golden.footer)
    (folder / "refund-4812-1.cassette").write_bytes(GOLDEN.read_bytes())
    args = ["run", CASE, "--mode", "review", "--cassettes", str(folder), "--store", store]
    code, _, err = replay(*args, "--run", "r")
    warnings = [line for line in err.splitlines() if line.startswith("warning:")]
    assert len(warnings) == 1, err
    assert warnings[0].startswith(f"warning: {empty}: the cassette holds no events; ")
    assert len(Store(store).trials("r")) == 2  # used all the same
    assert code == ExitCode.FAILED  # (a recording of nothing refunds nothing)
    spec = RunSpec(name="api", cases=[CASE], mode="review", cassettes=str(folder))
    with pytest.warns(UserWarning, match="the cassette holds no events"):
        execute(spec, Store(store))
    told: list[str] = []
    execute(RunSpec(name="api2", cases=[CASE], mode="review", cassettes=str(folder)),
            Store(store), on_warning=told.append)  # fmt: skip
    assert told == [warnings[0].removeprefix("warning: ")]


def test_grade_and_check_cases_exit_by_the_same_rule(store: str, tmp_path: Path) -> None:
    undecided = _case(tmp_path, "undecided.yaml", "graders: [tests.cli.exit_helpers:undecided]\n")
    code, out, _ = replay("grade", str(GOLDEN), "--case", undecided)
    assert (code, out.splitlines()[0]) == (ExitCode.INCOMPLETE, "refund-4812: unknown")
    replay("run", CASE, "--run", "crash", "--store", store, *CRASH)
    (crashed,) = Store(store).trials("crash")
    code, out, _ = replay("grade", str(crashed.cassette), "--case", CASE)
    assert code == ExitCode.FAILED, out
    code, out, _ = replay("check-cases", undecided, *TOOLS)
    assert code == ExitCode.INCOMPLETE
    assert out.splitlines()[-1] == "1 case(s) could not be judged"
    broken = _case(tmp_path, "broken.yaml", "graders: [tests.cli.custom_graders:explodes]\n")
    code, out, _ = replay("check-cases", broken, undecided, *TOOLS)
    assert code == ExitCode.FAILED  # a grader that raises on the reference: the graders are wrong
    assert "1 case(s) fail their own reference solution" in out
