"""The pytest plugin as a user meets it: a test of the demo agent against its cassette."""

from __future__ import annotations

import os

import pytest

from examples.shop import refund_policy
from replay.stub_llm import StubLLM
from tests.helpers import REPO

TEST_FILE = f'''
import pytest
from examples.shop import agent, make_tools

@pytest.mark.replay(cassette="{REPO}/cassettes/refund-4812.cassette",
                    case="{REPO}/examples/shop/cases/refund-4812.yaml")
def test_refund_replays_offline(replay_session):
    outcome = replay_session.run(agent, make_tools)
    assert outcome.verdict == "pass", outcome.evidence

@pytest.mark.replay(cassette="recorded/refund.cassette",
                    case="{REPO}/examples/shop/cases/refund-4812.yaml")
def test_refund_new_cassette(replay_session):
    outcome = replay_session.run(agent, make_tools)
    assert outcome.verdict == "pass", outcome.evidence
'''


@pytest.fixture
def project(pytester: pytest.Pytester) -> pytest.Pytester:
    pytester.makepyfile(test_agent=TEST_FILE)
    return pytester


def run(pytester: pytest.Pytester, *args: str, llm_url: str | None = None) -> pytest.RunResult:
    env = {"PYTHONPATH": str(REPO)}
    if llm_url:
        env["REPLAY_LLM_URL"] = llm_url
    old = {k: os.environ.get(k) for k in env}
    os.environ.update(env)
    try:
        return pytester.runpytest_subprocess("-p", "no:cacheprovider", *args)
    finally:
        for key, value in old.items():
            if value is None:
                os.environ.pop(key, None)
            else:
                os.environ[key] = value


def test_offline_by_default_and_strict_about_missing_cassettes(project: pytest.Pytester) -> None:
    result = run(project)
    result.assert_outcomes(passed=1, failed=1)
    result.stdout.fnmatch_lines(["*cassette */recorded/refund.cassette does not exist; record it*"])


def test_record_missing_then_replay_offline(project: pytest.Pytester) -> None:
    with StubLLM(refund_policy()) as llm:
        run(project, "--replay-record-missing", llm_url=llm.openai_base_url).assert_outcomes(
            passed=2
        )
    assert (project.path / "recorded" / "refund.cassette").exists()
    run(project).assert_outcomes(passed=2)  # now offline: no LLM running


FRAMEWORK_TEST = f'''
import pytest
from examples.frameworks import make_tools
from examples.frameworks.openai_agents_responses import agent

@pytest.mark.replay(cassette="recorded/reserve.cassette",
                    case="{REPO}/examples/frameworks/cases/reserve.yaml")
def test_reserve(replay_session):
    outcome = replay_session.run(agent, make_tools)   # an openai-agents agent, as it is
    assert outcome.verdict == "pass", outcome.evidence
'''


@pytest.mark.slow
def test_a_framework_agent_under_the_plugin(pytester: pytest.Pytester) -> None:
    pytest.importorskip("agents", reason="the frameworks extra is not installed")
    from examples.frameworks import reserve_policy

    pytester.makepyfile(test_reserve=FRAMEWORK_TEST)
    with StubLLM(reserve_policy()) as llm:
        run(pytester, "--replay-record-missing", llm_url=llm.openai_base_url).assert_outcomes(
            passed=1
        )
    assert (pytester.path / "recorded" / "reserve.cassette").exists()
    run(pytester).assert_outcomes(passed=1)  # offline, the LLM frozen: no server running
