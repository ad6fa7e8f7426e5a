"""`replay run`, `replay report`, `replay grade` end to end on the demo case."""

from __future__ import annotations

import json
import os
import shutil
import signal
import sqlite3
import subprocess
import sys
import time
from contextlib import closing
from pathlib import Path

import pytest

from examples.shop import refund_policy
from recorder import read_cassette
from replay import GradeRecord, Store, TrialRecord
from replay.graders import Verdict
from replay.stub_llm import StubLLM
from tests.helpers import HANG_GUARD_S, REPO, replay

CASE = str(REPO / "examples" / "shop" / "cases" / "refund-4812.yaml")
AGENT = ["--agent", "examples.shop:agent", "--tools", "examples.shop:make_tools"]


@pytest.fixture
def store(tmp_path: Path) -> str:
    return str(tmp_path / "results.db")


def test_sandbox_run_then_report(store: str) -> None:
    # One trial at a time: the seeded flakes then fall on the same trials every run
    # (with trials in flight, which trial draws which flake depends on timing).
    with StubLLM(refund_policy(), seed=3, flake_rate=0.15) as llm:
        code, out, _ = replay(
            "run",
            CASE,
            "--run",
            "flaky",
            "--trials",
            "8",
            "-j",
            "1",
            "--llm-url",
            llm.openai_base_url,
            "--store",
            store,
            *AGENT,
        )
    assert code == 1 and "replay report flaky" in out  # some trials fail (0 < c < 8, below)
    assert len(Store(store).trials("flaky")) == 8
    for trial in Store(store).trials("flaky"):  # the harness's seconds hold the recording's
        usage = trial.usage
        assert usage.duration is not None and usage.latency is not None
        assert usage.duration >= usage.latency > 0
    code, out, _ = replay("report", "flaky", "--store", store, "--json")
    data = json.loads(out)
    (case,) = data["cases"]
    assert case["n"] == 8 and 0 < case["c"] < 8
    assert data["suite"]["pass_hat"]["1"] == case["c"] / 8
    assert data["suite"]["pass_hat"]["8"] == 0.0 < data["suite"]["pass_at"]["8"]
    assert any("refunds.count(order_id=4812) == 1" in f["evidence"] for f in case["failures"])
    trials = data["trials"]  # each trial, to find the failing ones' cassettes
    assert [t["idx"] for t in trials] == list(range(8))
    assert sum(t["verdict"] == "pass" for t in trials) == case["c"]
    assert all(Path(t["cassette"]).exists() and t["steps"] for t in trials)
    code, out, _ = replay("report", "flaky", "--store", store)
    assert "suite pass^k (95% interval): k=1 " in out and "refund-4812 failed because:" in out


def test_review_and_offline_runs_from_recorded_cassettes(store: str, tmp_path: Path) -> None:
    with StubLLM(refund_policy()) as llm:
        replay(
            "run",
            CASE,
            "--run",
            "record",
            "-k",
            "2",
            "--llm-url",
            llm.openai_base_url,
            "--store",
            store,
            *AGENT,
        )
    recorded = str(Path(store).parent / "cassettes" / "record")
    code, _, _ = replay(
        "run", CASE, "--run", "again", "--mode", "review", "--cassettes", recorded, "--store", store
    )
    assert code == 0
    assert [t.verdict for t in Store(store).trials("again")] == ["pass", "pass"]
    code, _, _ = replay(
        "run",
        CASE,
        "--run",
        "off",
        "--mode",
        "offline",
        "-k",
        "3",
        "--cassettes",
        recorded,
        "--store",
        store,
        *AGENT,
    )
    assert code == 0
    assert [t.verdict for t in Store(store).trials("off")] == ["pass"] * 3
    trials = Store(store).trials("off")
    sources = {read_cassette(t.cassette).header.pins.user["recorded"] for t in trials}
    assert sources == {str(p) for p in Path(recorded).glob("*.cassette")}  # which one each replayed
    cassette = Store(store).trials("record")[0].cassette
    code, out, _ = replay("grade", cassette, "--case", CASE)
    assert code == 0 and out.startswith("refund-4812: pass")


def test_a_damaged_cassette_is_named_when_a_case_has_none_left(store: str, tmp_path: Path) -> None:
    folder = tmp_path / "recorded"
    folder.mkdir()
    (folder / "refund-4812-0.cassette").write_bytes(b"not a cassette at all")
    code, _, err = replay(
        "run", CASE, "--run", "r", "--mode", "review", "--cassettes", str(folder), "--store", store
    )
    assert code == 2 and err.count("\n") == 1
    assert "no cassette for case 'refund-4812'" in err
    assert "(unreadable, skipped: refund-4812-0.cassette: " in err


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--mode", "sandbox", "--llm-url", "http://x/v1"], "sandbox mode needs --agent MOD:FN"),
        (["--mode", "review"], "review mode needs --cassettes DIR"),
        (
            ["--mode", "sandbox", "--agent", "nowhere:agent", "--tools", "x:y", "--llm-url", "u"],
            "cannot load 'nowhere:agent'",
        ),
        (
            ["--agent", "builtins:RuntimeError", "--tools", "examples.shop:make_tools"],
            "'builtins:RuntimeError' is a class, not an agent",
        ),
        (
            ["--agent", "examples.shop:make_tools", "--tools", "examples.shop:make_tools"],
            "does not take (instruction, env)",
        ),
        (
            [*AGENT[:2], "--tools", "tests.cli.secret_agents:crash", "--fault", "duplicate:x"],
            "tests.cli.secret_agents:crash failed making case 'refund-4812''s tools: TypeError",
        ),
        (
            [*AGENT, "--fault", "duplicate:no_such_tool"],
            "fault on no_such_tool: case 'refund-4812' has no such tool (its tools: ",
        ),
    ],
)
def test_bad_runs_are_one_line_errors(store: str, args: list[str], message: str) -> None:
    args = (
        [*args, "--llm-url", "http://127.0.0.1:9/v1", "--no-llm-check"]
        if "--llm-url" not in args
        else args
    )
    code, _, err = replay("run", CASE, "--run", "bad", "--store", store, *args)
    assert code == 2 and message in err and err.count("\n") == 1


def stored_trials(store: str) -> int:
    """Trials the run being killed has stored, read without taking any lock."""
    try:
        with closing(sqlite3.connect(f"file:{store}?mode=ro", uri=True)) as conn:
            return int(conn.execute("select count(*) from trials").fetchone()[0])
    except sqlite3.Error:  # not created yet
        return 0


@pytest.mark.slow
def test_a_killed_run_resumes_to_exactly_k_trials(store: str) -> None:
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    binary = str(Path(sys.executable).with_name("replay"))
    with StubLLM(refund_policy()) as llm:
        args = [
            binary,
            "run",
            CASE,
            "--run",
            "killed",
            "-k",
            "20",
            "--llm-url",
            llm.openai_base_url,
            "--store",
            store,
            *AGENT,
        ]
        with subprocess.Popen(
            args, env=env, cwd=REPO, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL
        ) as proc:
            deadline = time.monotonic() + 60
            while time.monotonic() < deadline and stored_trials(store) < 2:
                time.sleep(0.02)
            proc.send_signal(signal.SIGKILL)
            proc.wait(timeout=10)
        stored = len(Store(store).trials("killed"))
        assert 2 <= stored < 20, "the run should have been killed part-way"
        code, _, _ = replay("run", "--run", "killed", "--resume", "--store", store)
    assert code == 0
    trials = Store(store).trials("killed")
    assert sorted(t.idx for t in trials) == list(range(20))
    assert Store(store).run("killed").finished  # type: ignore[union-attr]


@pytest.mark.slow
def test_ctrl_c_says_how_to_resume_and_the_hint_for_a_used_name_works(store: str) -> None:
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    binary = str(Path(sys.executable).with_name("replay"))
    with StubLLM(refund_policy()) as llm:
        url = ["--llm-url", llm.openai_base_url]
        args = [binary, "run", CASE, "--run", "stopped", "-k", "20", "--store", store, *url]
        with subprocess.Popen(
            [*args, *AGENT], env=env, cwd=REPO, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE
        ) as proc:
            deadline = time.monotonic() + 60
            while time.monotonic() < deadline and stored_trials(store) < 2:
                time.sleep(0.02)
            proc.send_signal(signal.SIGINT)
            _, err = proc.communicate(timeout=30)
        assert proc.returncode == 130
        hint = f"`replay run --resume --run stopped --store {Path(store).resolve()}`"
        assert err.decode().strip().splitlines()[-1].endswith(hint)
        code, _, err = replay("run", CASE, "--run", "stopped", "--store", store, *url, *AGENT)
        assert code == 2 and hint in err
        code, _, err = replay(*hint.strip("`").split()[1:])  # the hint, as given
        assert code == 0, err
    assert sorted(t.idx for t in Store(store).trials("stopped")) == list(range(20))


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (
            ["--resume", "--trials", "3"],
            "--resume continues run 'r' as it was started; drop trials",
        ),
        (["--resume"], "no run 'r' to resume"),
        (["--set", "novalue", CASE], "--set 'novalue' is not key=value"),
        (["--mode", "wild", CASE], "Invalid value for '--mode'"),
        (["-k", "0", CASE], "Invalid value for '--trials'"),
        ([CASE, CASE, "--llm-url", "http://x/v1", *AGENT], "case id 'refund-4812' is used by"),
        (
            [CASE, "--mode", "offline", "--llm", "live", "--cassettes", ".", *AGENT],
            "needs --llm-url",
        ),
    ],
)
def test_run_options_are_checked_in_one_line(store: str, args: list[str], message: str) -> None:
    code, _, err = replay("run", "--run", "r", "--store", store, *args)
    assert code == 2 and message in err and err.count("\n") == 1, err


def test_report_without_a_store_creates_nothing(tmp_path: Path) -> None:
    missing = tmp_path / "nowhere" / "results.db"
    code, _, err = replay("report", "x", "--store", str(missing))
    assert code == 2 and "no results store at" in err and not missing.parent.exists()


def test_a_trial_and_its_grades_are_stored_together(tmp_path: Path) -> None:
    store = Store(tmp_path / "r.db")
    store.start_run("r", {}, {})
    grade = GradeRecord("state", Verdict.PASS, meta={"model": object()})  # no JSON: fails last
    with pytest.raises(TypeError):
        store.add_trial("r", TrialRecord(case_id="c", idx=0, verdict=Verdict.PASS, grades=(grade,)))
    assert store.finished_trials("r") == set()


def test_an_agent_that_returns_none_is_warned_of(tmp_path: Path) -> None:
    from recorder import WarningEvent
    from replay import load_case, sandbox

    (tmp_path / "notes.sql").write_text("CREATE TABLE notes (id INTEGER PRIMARY KEY);\n")
    (tmp_path / "c.yaml").write_text(
        "id: c\ninstruction: do nothing\nfixture: notes.sql\nassert:\n  - no_side_effects\n"
    )
    trial = sandbox(
        load_case(tmp_path / "c.yaml"),
        lambda instruction, env: None,
        lambda conn: [],
        tmp_path / "t.cassette",
        llm_base_url="http://127.0.0.1:9/v1",
    )
    events = read_cassette(trial.cassette).events
    warnings = [e.message for e in events if isinstance(e, WarningEvent)]
    assert warnings == ["the agent returned None: its answer is the last LLM reply, if any"]


@pytest.mark.parametrize(
    ("old", "new", "message"),
    [
        ("orders[4812].status", "orderz[4812].status", "assertion 3 names table 'orderz'"),
        ("refunds.count(order_id=4812)", "refunds.count(order=4812)", "column 'order' of"),
        ("allowed_tables: [orders,", "allowed_tables: [order,", "allowed_tables names table"),
    ],
    ids=["table", "column", "allowed-tables"],
)
def test_a_case_naming_what_its_fixture_lacks_is_refused_before_any_trial(
    tmp_path: Path, store: str, old: str, new: str, message: str
) -> None:
    text = Path(CASE).read_text().replace("../fixture.sql", str(REPO / "examples/shop/fixture.sql"))
    assert old in text
    typo = tmp_path / "typo.yaml"
    typo.write_text(text.replace(old, new))
    with StubLLM(refund_policy()) as llm:  # the agent would pass: a typo is not its failure
        code, out, err = replay(
            "run", CASE, str(typo), "--run", "typo", "-k", "2", "--store", store,
            "--llm-url", llm.openai_base_url, *AGENT,
        )  # fmt: skip
        assert llm.requests == []
    assert code == 2 and err.count("\n") == 1 and "stored in" not in out
    assert err.startswith(f"error: {typo}: ") and message in err and "but the fixture" in err
    assert not Path(store).exists() or Store(store).run("typo") is None


def _run_asking_for_walls_again(
    tmp_path: Path, request: pytest.FixtureRequest
) -> tuple[int, str, str]:
    """A sandbox run of the demo case, the walls' availability asked anew (and after the test).

    Returns the exit code, stderr and the store's path.
    """
    import replay.agents._choice as isolation

    isolation.unavailable.cache_clear()  # asked once a process
    request.addfinalizer(isolation.unavailable.cache_clear)
    store = str(tmp_path / "results.db")
    with StubLLM(refund_policy()) as llm:
        code, _, err = replay(
            "run", CASE, "--run", "r", "--store", store, "--llm-url", llm.openai_base_url, *AGENT
        )
    return code, err, store


def test_without_bubblewrap_a_sandbox_run_goes_unwalled_and_says_why(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, request: pytest.FixtureRequest
) -> None:
    """No walls can be built: `auto` runs the agent unwalled, saying why; `process` is refused."""
    import replay.agents._choice as isolation

    class NoBwrap:  # the walls' look-up of bubblewrap finds none; any other, as it is
        @staticmethod
        def which(name: str) -> str | None:
            return None if name == "bwrap" else shutil.which(name)

    monkeypatch.setattr(isolation, "shutil", NoBwrap)
    code, err, store = _run_asking_for_walls_again(tmp_path, request)
    assert code == 0, err
    assert "bubblewrap (bwrap) is not installed (Debian: apt-get install bubblewrap)" in err
    assert "(--isolation none" in err
    assert [t.verdict for t in Store(store).trials("r")] == ["pass"]
    code, _, err = replay(
        "run", CASE, "--run", "p", "--store", store, "--isolation", "process", *AGENT,
        "--llm-url", "http://127.0.0.1:9/v1", "--no-llm-check",
    )  # fmt: skip
    assert code == 2 and "bubblewrap (bwrap) is not installed" in err, err
    assert err.count("\n") == 1, err


def test_a_walled_agent_s_tools_need_no_mcp_sdk(tmp_path: Path) -> None:
    """The harness serves a walled agent's tools over MCP itself: no SDK is imported for it."""
    import replay.agents._choice as isolation

    if isolation.unavailable() is not None:
        pytest.skip(f"walls cannot be built here: {isolation.unavailable()}")
    no_sdk = (
        "import sys; sys.modules.update(mcp=None, uvicorn=None, starlette=None); "
        "from replay._cli.main import main; sys.argv[0] = 'replay'; main()"
    )
    store = str(tmp_path / "results.db")
    with StubLLM(refund_policy()) as llm:
        done = subprocess.run(
            [sys.executable, "-c", no_sdk, "run", CASE, "--run", "r", "--store", store,
             "--isolation", "process", "--llm-url", llm.openai_base_url, *AGENT],
            capture_output=True, text=True, timeout=HANG_GUARD_S, cwd=REPO,
        )  # fmt: skip
    assert done.returncode == 0, done.stderr
    (trial,) = Store(store).trials("r")
    assert trial.verdict == "pass", trial
    tools = [e for e in read_cassette(trial.cassette).events if e.kind == "tool"]
    assert "issue_refund" in [e.name for e in tools]  # called over MCP, recorded in the trial


def test_a_bubblewrap_too_old_for_sized_folders_is_named_and_the_run_goes_unwalled(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, request: pytest.FixtureRequest
) -> None:
    """bubblewrap before 0.7 has no --size: the walls could not be built, so none are tried."""
    real = shutil.which("bwrap")
    if real is None:
        pytest.skip("bubblewrap is not installed: no older one to pretend to be")
    old = tmp_path / "bin" / "bwrap"
    old.parent.mkdir()
    old.write_text(
        "#!/bin/sh\n"
        'for a in "$@"; do [ "$a" = --size ] && { echo "bwrap: Unknown option --size" >&2; '
        "exit 1; }; done\n"
        f'exec {real} "$@"\n'
    )
    old.chmod(0o755)
    monkeypatch.setenv("PATH", f"{old.parent}{os.pathsep}{os.environ['PATH']}")
    code, err, store = _run_asking_for_walls_again(tmp_path, request)
    assert code == 0, err
    assert "bubblewrap 0.7 or later (--size) (bwrap: Unknown option --size)" in err
    assert [t.verdict for t in Store(store).trials("r")] == ["pass"]
