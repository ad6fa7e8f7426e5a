"""Fields that change on every run (``ignore_fields``) are left out of matching.

An agent whose every LLM request carries a fresh id (as Claude Code's
``metadata.user_id``) cannot be replayed offline: each request misses. Named in
the case's ``ignore_fields``, in ``replay run --ignore-field``, or given to
``playback()``, the field is left out of the recorded and the live requests
alike, and the replay passes; a request that differs elsewhere still misses,
and its message names that difference, not the ignored field.
"""

from __future__ import annotations

import uuid
from pathlib import Path
from typing import Any

import httpx
import pytest

from recorder import ConfigError, FixtureUnsupported, playback, record
from replay import Store, load_case, offline, sandbox
from replay.graders import Verdict
from replay.stub_llm import EchoPolicy, StubLLM
from tests.helpers import replay

TOOLS = "tests.replay.test_ignore_fields:no_tools"


def agent(instruction: str, env: Any) -> str:
    """One LLM call with a fresh request id in its body (``env.settings["model"]`` or m-1)."""
    body = {
        "model": env.settings.get("model", "m-1"),
        "messages": [{"role": "user", "content": instruction}],
        "metadata": {"user_id": f"session-{uuid.uuid4()}"},
    }
    reply = httpx.post(f"{env.llm_base_url}/chat/completions", json=body, timeout=60).json()
    return str(reply.get("choices", [{}])[0].get("message", {}).get("content", reply))


def no_tools(conn: Any) -> list[Any]:
    """No tools: the LLM call is what is replayed."""
    return []


def _case(folder: Path, *fields: str) -> Path:
    (folder / "empty.sql").write_text("CREATE TABLE t (id INTEGER PRIMARY KEY);\n")
    listed = f"ignore_fields: [{', '.join(repr(f) for f in fields)}]\n" if fields else ""
    path = folder / f"ask{len(fields)}.yaml"
    path.write_text(f"id: ask\ninstruction: Say hello.\nfixture: empty.sql\n{listed}")
    return path


@pytest.fixture
def recorded(tmp_path: Path) -> Path:
    with StubLLM(EchoPolicy()) as llm:
        trial = sandbox(
            load_case(_case(tmp_path)), agent, no_tools, tmp_path / "rec" / "ask-0.cassette",
            llm_base_url=llm.openai_base_url,
        )  # fmt: skip
    assert trial.outcome.verdict is Verdict.PASS, trial.outcome
    return tmp_path / "rec" / "ask-0.cassette"


def test_a_fresh_id_misses_unless_the_case_ignores_it(tmp_path: Path, recorded: Path) -> None:
    from recorder import read_cassette

    cassette = read_cassette(recorded)
    plain = offline(load_case(_case(tmp_path)), agent, no_tools, cassette, tmp_path / "a.cassette")
    assert plain.outcome.verdict is Verdict.UNSUPPORTED
    assert "differing in metadata.user_id" in " ".join(plain.outcome.evidence)
    code, shown, _ = replay("show", str(plain.cassette))  # the LLM call marked as missed
    assert code == 0 and "missed: the recording does not hold it: HTTP 400" in shown

    case = load_case(_case(tmp_path, "metadata.user_id"))
    ignored = offline(case, agent, no_tools, cassette, tmp_path / "b.cassette")
    assert ignored.outcome.verdict is Verdict.PASS, ignored.outcome
    assert read_cassette(ignored.cassette).summary().final_answer == "echo: Say hello."
    channels = {c.channel: c for c in read_cassette(ignored.cassette).manifest()}
    assert channels["llm"].state == "frozen"  # answered from the recording, not captured live
    assert channels["llm"].detail == "1 call (openai), answered from the recording"
    recorded_llm = next(c for c in cassette.manifest() if c.channel == "llm")
    assert recorded_llm.state == "captured"

    other = offline(
        case, agent, no_tools, cassette, tmp_path / "c.cassette", settings={"model": "m-2"}
    )
    assert other.outcome.verdict is Verdict.UNSUPPORTED  # what else differs still misses
    evidence = " ".join(other.outcome.evidence)
    assert 'differing in model: "m-1" -> "m-2"' in evidence and "user_id" not in evidence


def test_replay_run_ignores_a_field_given_on_the_command_line(
    tmp_path: Path, recorded: Path
) -> None:
    store = str(tmp_path / "r.db")
    common = [
        "--mode", "offline", "--store", store, "--cassettes", str(recorded.parent),
        "--agent", "tests.replay.test_ignore_fields:agent",
        "--tools", "tests.replay.test_ignore_fields:no_tools",
    ]  # fmt: skip
    code, _, err = replay("run", str(_case(tmp_path)), "--run", "plain", *common)
    assert code == 3, err
    code, _, err = replay(
        "run", str(_case(tmp_path)), "--run", "ignored", *common, "--ignore-field", "@claude-code"
    )
    assert code == 0, err
    assert [t.verdict for t in Store(store).trials("ignored")] == ["pass"]


def test_playback_takes_the_same_fields(tmp_path: Path) -> None:
    body: dict[str, Any] = {"model": "m-1", "messages": [{"role": "user", "content": "hi"}]}
    with StubLLM(EchoPolicy()) as llm:
        url = f"{llm.openai_base_url}/chat/completions?ts=1"
        with record(tmp_path / "p.cassette"):
            httpx.post(url, json=body, headers={"x-request-id": "a"})
    again = url.replace("ts=1", "ts=2")
    with pytest.raises(FixtureUnsupported), playback(tmp_path / "p.cassette"):
        httpx.post(again, json=body)
    with playback(tmp_path / "p.cassette", ignore_fields=["query:ts"]):
        assert httpx.post(again, json=body).json()["choices"][0]["message"]["content"] == "echo: hi"
    with StubLLM(EchoPolicy()) as llm:  # a query written otherwise, without the field at all
        url = f"{llm.openai_base_url}/chat/completions?q=a%20b&ts=1"
        with record(tmp_path / "q.cassette"):
            httpx.post(url, json=body)
    with playback(tmp_path / "q.cassette", ignore_fields=["query:ts"]):
        bare = url.removesuffix("&ts=1")
        assert httpx.post(bare, json=body).json()["choices"][0]["message"]["content"] == "echo: hi"


def test_a_field_that_is_no_path_is_a_one_line_error(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="unknown ignore-field preset '@nope'"):
        playback(tmp_path / "none.cassette", ignore_fields=["@nope"])
    code, _, err = replay("check-cases", str(_case(tmp_path, "a..b")), "--tools", TOOLS)
    assert code == 2 and err.count("\n") == 1 and "ignore field 'a..b'" in err, err
