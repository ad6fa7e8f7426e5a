"""An agent in another language through ``replay run --agent-cmd``, in the modes that run one.

``examples/node/agent.mjs`` is Node with the official ``openai`` and MCP npm
packages, and nothing of ours: it gets the trial's recording LLM proxy
(``OPENAI_BASE_URL``) and tools (``REPLAY_MCP_URL``) in its environment. Its
LLM exchanges and tool calls are recorded as a Python agent's, graded, and
replayed offline with the LLM frozen and the stub stopped.
"""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from recorder import HttpEvent, ToolEvent, llm_call, read_cassette
from replay import Store
from replay.stub_llm import ScriptedPolicy, StubLLM
from tests.helpers import REPO, replay

NODE = REPO / "examples" / "node"
pytestmark = [
    pytest.mark.slow,
    pytest.mark.skipif(shutil.which("node") is None, reason="node is not installed"),
    pytest.mark.skipif(
        not (NODE / "node_modules").is_dir(),
        reason="examples/node's packages are not installed (make test runs npm ci there)",
    ),
]
CASE = str(REPO / "examples" / "frameworks" / "cases" / "reserve.yaml")
AGENT = [
    "--agent-cmd", f"node {NODE / 'agent.mjs'}", "--tools", "examples.frameworks:make_tools",
]  # fmt: skip


def _verdicts(store: str, run: str) -> list[str]:
    return [t.verdict for t in Store(store).trials(run)]


def test_a_node_agent_is_recorded_graded_and_replayed_offline(tmp_path: Path) -> None:
    store = str(tmp_path / "results.db")
    policy = ScriptedPolicy.from_json(REPO / "examples" / "frameworks" / "script.json")
    with StubLLM(policy) as llm:
        for mode in ("sandbox", "record"):
            code, _, err = replay(
                "run", CASE, "--run", mode, "--mode", mode, "-k", "2", "--store", store,
                *AGENT, "--llm-url", llm.openai_base_url,
            )  # fmt: skip
            assert code == 0, err
            assert _verdicts(store, mode) == ["pass", "pass"], Store(store).trials(mode)
    cassettes = tmp_path / "cassettes" / "sandbox"
    events = read_cassette(cassettes / "reserve-mugs-0.cassette").events
    assert sum(1 for e in events if isinstance(e, HttpEvent) and llm_call(e)) == 3  # proxied
    calls = [e.name for e in events if isinstance(e, ToolEvent)]
    assert sorted(calls) == ["check_stock", "check_stock", "reserve", "reserve"]

    code, _, err = replay(
        "run", CASE, "--run", "offline", "--mode", "offline", "--store", store,
        "--cassettes", str(cassettes), *AGENT,
    )  # fmt: skip
    assert code == 0, err
    assert _verdicts(store, "offline") == ["pass"]  # the stub is gone: the LLM was frozen

    # Another model asked: a miss, answered once with a 400 the SDK does not retry.
    code, _, err = replay(
        "run", CASE, "--run", "missed", "--mode", "offline", "--store", store,
        "--cassettes", str(cassettes), *AGENT, "--model", "stub-other-1",
    )  # fmt: skip
    assert code == 3, err
    (trial,) = Store(store).trials("missed")
    assert trial.verdict == "unsupported" and '"stub-inventory-1" -> "stub-other-1"' in str(
        trial.grades
    ), trial
    asked = [e for e in read_cassette(trial.cassette).events if isinstance(e, HttpEvent)]
    assert [e.response.status for e in asked if e.response] == [400]  # never asked again
