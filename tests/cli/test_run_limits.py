"""`replay run`'s limits: a trial past one is ``error`` of cause ``limit``, with its guard flag.

A deadline (``--trial-timeout``, in-process agents sync and async included),
a cap on LLM tokens (``--max-llm-tokens``, in-process and through the LLM
proxy) and on a tool result's size (``--max-tool-result-chars``, sandbox and
offline): the trial that hits one is flagged, its neighbours are not, the run
goes on, and ``replay report`` (terminal, ``--json``, HTML) says which.
"""

from __future__ import annotations

import gc
import json
import sys
import time
from pathlib import Path

import pytest

from recorder import ErrorEvent, HttpEvent, ToolEvent, WarningEvent, read_cassette
from replay import Store, run_html
from replay.stub_llm import StubLLM
from tests.cli import limit_agents
from tests.helpers import replay

TOOLS = ["--tools", "tests.cli.limit_agents:make_tools"]
NO_LLM = ["--llm-url", "http://127.0.0.1:9/v1", "--no-llm-check"]
IN_PROCESS = ("--isolation", "none")
"""What these tests are about: an agent in the harness's process (walls are the sandbox's
default where bubblewrap runs; walled agents keep their own deadline, tested in e2e)."""


def _case(folder: Path, case_id: str, instruction: str) -> str:
    (folder / "notes.sql").write_text(
        "CREATE TABLE notes (id INTEGER PRIMARY KEY, text TEXT NOT NULL);\n"
    )
    path = folder / f"{case_id}.yaml"
    path.write_text(
        f"id: {case_id}\ninstruction: {instruction}\nfixture: notes.sql\n"
        'assert:\n  - answer contains "done"\n'
    )
    return str(path)


def _trials(store: str, run: str) -> dict[tuple[str, int], tuple[str, str | None, list[str]]]:
    return {
        (t.case_id, t.idx): (t.verdict, t.cause, list(t.guards)) for t in Store(store).trials(run)
    }


def _tokens(store: str, run: str, case_id: str) -> int:
    (trial,) = [t for t in Store(store).trials(run) if t.case_id == case_id]
    assert trial.usage.input_tokens is not None and trial.usage.output_tokens is not None
    return trial.usage.input_tokens + trial.usage.output_tokens


def _cassette(store: str, run: str, case_id: str, idx: int = 0) -> Path:
    (trial,) = [t for t in Store(store).trials(run) if t.case_id == case_id and t.idx == idx]
    assert trial.cassette
    return Path(trial.cassette)


@pytest.fixture
def store(tmp_path: Path) -> str:
    return str(tmp_path / "results.db")


def test_a_trial_over_its_token_cap_is_a_limit_error_and_its_neighbour_passes(
    tmp_path: Path, store: str
) -> None:
    chatty, brief = _case(tmp_path, "chatty", "talk 5"), _case(tmp_path, "brief", "talk 1")
    agent = ["--agent", "tests.cli.limit_agents:talk", *TOOLS]
    with StubLLM() as llm:
        url = ["--llm-url", llm.openai_base_url]
        code, _, err = replay("run", brief, "--run", "free", "--store", store, *agent, *url)
        assert code == 0, err
        one = _tokens(store, "free", "brief")  # what one call costs
        cap = one + one // 2  # the second call passes it
        code, _, err = replay(
            "run", chatty, brief, "--run", "capped", "--store", store, *agent, *url,
            "--max-llm-tokens", str(cap),
        )  # fmt: skip
    assert code == 1, err  # a limit fired: the agent's doing
    assert _trials(store, "capped") == {
        ("brief", 0): ("pass", None, []),
        ("chatty", 0): ("error", "limit", ["llm_tokens"]),
    }
    assert _tokens(store, "capped", "chatty") == 2 * one  # the third call was refused
    events = read_cassette(_cassette(store, "capped", "chatty")).events
    calls = [e for e in events if isinstance(e, HttpEvent)]
    assert [c.response.status for c in calls if c.response] == [200, 200, 403]
    refused = json.loads(b"".join(calls[2].response.chunks))  # type: ignore[union-attr]
    assert refused["error"]["message"] == (
        f"agent-replay: the trial's LLM calls used {2 * one} tokens, more than its {cap} "
        "(--max-llm-tokens): request refused"
    )
    (raised,) = [e for e in events if isinstance(e, ErrorEvent)]
    assert raised.error.type == "openai.PermissionDeniedError"  # as for any failed call
    (trial,) = [t for t in Store(store).trials("capped") if t.case_id == "chatty"]
    assert list(trial.cause_detail) == [
        f"the trial's LLM calls used {2 * one} tokens, more than its {cap} (--max-llm-tokens)"
    ]


def test_the_token_cap_holds_an_agent_program_through_the_llm_proxy(
    tmp_path: Path, store: str
) -> None:
    chatty = _case(tmp_path, "chatty", "talk 4")
    program = f"{sys.executable} -m tests.cli.limit_agents"
    with StubLLM() as llm:
        code, _, err = replay(
            "run", chatty, "--run", "proxied", "--store", store, *TOOLS,
            "--agent-cmd", program, "--llm-url", llm.openai_base_url, "--max-llm-tokens", "1",
        )  # fmt: skip
    assert code == 1, err
    assert _trials(store, "proxied") == {("chatty", 0): ("error", "limit", ["llm_tokens"])}
    calls = [
        e for e in read_cassette(_cassette(store, "proxied", "chatty")).events
        if isinstance(e, HttpEvent)
    ]  # fmt: skip
    assert [c.response.status for c in calls if c.response] == [200, 403]  # then it gave up


def test_a_reply_without_usage_is_not_counted_and_the_cassette_says_so(
    tmp_path: Path, store: str
) -> None:
    """A stream without usage cannot be counted: nothing is refused, the cassette warns."""
    case = _case(tmp_path, "streamed", "stream 3")
    with StubLLM() as llm:
        code, _, err = replay(
            "run", case, "--run", "unknown", "--store", store, *TOOLS,
            "--agent", "tests.cli.limit_agents:talk", "--llm-url", llm.openai_base_url,
            "--max-llm-tokens", "1",
        )  # fmt: skip
    assert code == 0, err
    assert _trials(store, "unknown") == {("streamed", 0): ("pass", None, [])}
    warnings = [
        e.message
        for e in read_cassette(_cassette(store, "unknown", "streamed")).events
        if isinstance(e, WarningEvent)
    ]
    assert warnings == [
        "3 LLM call(s) reported no token usage: not counted against the trial's cap of 1 "
        "tokens (--max-llm-tokens)"
    ]


def test_a_tool_result_over_its_cap_is_refused_in_sandbox_and_offline(
    tmp_path: Path, store: str
) -> None:
    long, short = _case(tmp_path, "long", "read 500"), _case(tmp_path, "short", "read 5")
    agent = ["--agent", "tests.cli.limit_agents:read", *TOOLS, *NO_LLM]
    cap = ["--max-tool-result-chars", "100"]
    code, _, err = replay(
        "run", long, short, "--run", "box", "--store", store, *agent, *cap, *IN_PROCESS
    )
    assert code == 1, err
    assert _trials(store, "box") == {
        ("long", 0): ("error", "limit", ["tool_result_chars"]),
        ("short", 0): ("pass", None, []),
    }
    cassette = read_cassette(_cassette(store, "box", "long"))
    (call,) = [e for e in cassette.events if isinstance(e, ToolEvent)]
    message = (
        "tool text returned 502 characters (as JSON), more than the trial's cap of 100 "
        "(--max-tool-result-chars): not given to the agent"
    )
    assert call.result is None and call.error is not None and call.error.message == message
    assert cassette.summary().final_answer == f"done, but: {message}"  # the agent got an error
    # Offline, the recorded (uncapped) results would be given to the agent: capped alike.
    code, _, err = replay(
        "run", long, short, "--run", "free", "--store", store, *agent, *IN_PROCESS
    )
    assert code == 0, err
    recorded = str(Path(store).parent / "cassettes" / "free")
    code, _, err = replay(
        "run", long, short, "--run", "off", "--mode", "offline", "--cassettes", recorded,
        "--store", store, *agent, *cap,
    )  # fmt: skip
    assert code == 1, err  # the long result is capped offline too
    assert _trials(store, "off") == {
        ("long", 0): ("error", "limit", ["tool_result_chars"]),
        ("short", 0): ("pass", None, []),
    }


@pytest.mark.parametrize("entry", ["sleep", "sleep_async"])
def test_an_in_process_agent_past_its_deadline_is_left_behind_and_the_run_goes_on(
    tmp_path: Path, store: str, entry: str
) -> None:
    slow, quick = _case(tmp_path, "slow", "sleep 120"), _case(tmp_path, "quick", "sleep 0")
    limit_agents.LATE.clear()
    limit_agents.WAKE.clear()
    code, _, err = replay(
        "run", slow, quick, "--run", "late", "-k", "2", "--store", store, *TOOLS, *NO_LLM,
        *IN_PROCESS,
        "--agent", f"tests.cli.limit_agents:{entry}", "--trial-timeout", "0.5",
    )  # fmt: skip
    assert code == 1, err
    # Each slow trial was cut at 0.5 s, not waited for: its agent is still asleep (or, async,
    # was cancelled asleep).
    woke = [(slept, what) for slept, what in limit_agents.LATE if slept and what != "cancelled"]
    assert not woke, limit_agents.LATE
    limit_agents.WAKE.set()
    assert _trials(store, "late") == {
        ("quick", 0): ("pass", None, []),
        ("quick", 1): ("pass", None, []),
        ("slow", 0): ("error", "limit", ["timeout"]),
        ("slow", 1): ("error", "limit", ["timeout"]),
    }
    (trial,) = [t for t in Store(store).trials("late") if (t.case_id, t.idx) == ("slow", 0)]
    assert trial.cause_detail == ("the agent ran past its deadline of 0.5 s (--trial-timeout)",)
    cassette = read_cassette(_cassette(store, "late", "slow"))
    (raised,) = [e for e in cassette.events if isinstance(e, ErrorEvent)]
    assert raised.error.type.endswith("LimitExceeded")
    if entry == "sleep_async":
        assert sorted(limit_agents.LATE) == [(0, "written")] * 2 + [(120, "cancelled")] * 2
    else:  # a thread cannot be stopped: once it wakes, its calls are refused
        deadline = time.monotonic() + 15
        while len(limit_agents.LATE) < 4 and time.monotonic() < deadline:
            time.sleep(0.1)
        refused = (
            "RecordingClosed: the recording into {} has closed: a call made after it (from a "
            "thread or task its trial left running) is refused"
        )
        assert sorted(limit_agents.LATE) == [(0, "written")] * 2 + sorted(
            (120, refused.format(_cassette(store, "late", "slow", n))) for n in (0, 1)
        )
    assert not [e for e in read_cassette(cassette.path).events if isinstance(e, ToolEvent)]


def test_in_process_agents_run_in_threads_kept_between_trials(tmp_path: Path, store: str) -> None:
    """What an agent keeps per thread (a connection) outlives its trial: the next trial
    in that thread finds it (a thread left behind past a deadline is given none: above)."""
    case = _case(tmp_path, "count", "count")
    code, _, err = replay(
        "run", case, "--run", "kept", "-k", "5", "-j", "1", "--store", store, *TOOLS,
        *NO_LLM, *IN_PROCESS, "--agent", "tests.cli.limit_agents:count_trials",
    )  # fmt: skip
    assert code == 0, err
    answers = sorted(
        read_cassette(_cassette(store, "kept", "count", n)).footer.final_answer  # type: ignore[union-attr]
        for n in range(5)
    )
    assert answers == [f"done {n}" for n in range(1, 6)]  # (a thread each: all "done 1")


def test_an_idle_agent_thread_holds_nothing_of_its_last_trial(tmp_path: Path, store: str) -> None:
    case = _case(tmp_path, "remember", "remember")
    limit_agents.ENVS.clear()
    code, _, err = replay(
        "run", case, "--run", "idle", "-k", "3", "-j", "1", "--store", store, *TOOLS,
        *NO_LLM, *IN_PROCESS, "--agent", "tests.cli.limit_agents:remember",
    )  # fmt: skip
    assert code == 0, err
    assert len(limit_agents.ENVS) == 3
    deadline = time.monotonic() + 60  # (a hang guard: the threads let go as they go idle)
    while any(ref() is not None for ref in limit_agents.ENVS) and time.monotonic() < deadline:
        gc.collect()
        time.sleep(0.05)
    assert [ref() for ref in limit_agents.ENVS] == [None] * 3  # the trials' environments


def test_the_report_says_which_limits_fired(tmp_path: Path, store: str) -> None:
    slow, quick = _case(tmp_path, "slow", "sleep 3"), _case(tmp_path, "quick", "sleep 0")
    code, _, err = replay(
        "run", slow, quick, "--run", "r", "--store", store, *TOOLS, *NO_LLM, *IN_PROCESS,
        "--agent", "tests.cli.limit_agents:sleep_async", "--trial-timeout", "0.2",
    )  # fmt: skip
    assert code == 1, err
    code, out, _ = replay("report", "r", "--store", store)
    assert code == 0
    assert "limits hit (error trials, cause limit): timeout 1" in out
    assert "slow failed because:" in out
    assert "1 x limit: the agent ran past its deadline of 0.2 s (--trial-timeout)" in out
    code, out, _ = replay("report", "r", "--store", store, "--json")
    data = json.loads(out)
    assert data["suite"]["guards"] == {"timeout": 1}
    by_case = {c["case"]: c for c in data["cases"]}
    assert by_case["slow"]["guards"] == {"timeout": 1} and by_case["quick"]["guards"] == {}
    assert by_case["slow"]["failures"][0]["evidence"].startswith("limit: the agent ran past")
    page = run_html(Store(store), "r")
    assert '<span class="guard">limit hit: timeout</span>' in page
    assert "limits hit: timeout in 1 (error trials)" in page


def test_caps_are_refused_where_no_agent_runs(tmp_path: Path, store: str) -> None:
    case = _case(tmp_path, "c", "read 1")
    code, _, err = replay(
        "run", case, "--run", "rev", "--mode", "review", "--cassettes", str(tmp_path),
        "--store", store, "--max-llm-tokens", "10",
    )  # fmt: skip
    assert code == 2 and "--max-llm-tokens: caps on the agent, moot in review" in err
