"""The pytest plugin as a user meets it: a test of the demo agent against its cassette."""

from __future__ import annotations

import os

import pytest

from examples.shop import refund_policy
from recorder import ToolEvent, read_cassette
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


UNRELATED = ["-p", "no:langsmith_plugin", "-p", "no:anyio", "-p", "no:hypothesispytest"]
"""Other packages' pytest plugins (the frameworks extra's): each test's pytest would spend
over a second loading them, and ours meets none of them."""


def run(
    pytester: pytest.Pytester,
    *args: str,
    llm_url: str | None = None,
    env: dict[str, str] | None = None,
) -> pytest.RunResult:
    env = {"PYTHONPATH": str(REPO), **(env or {})}
    if llm_url:
        env["REPLAY_LLM_URL"] = llm_url
    old = {k: os.environ.get(k) for k in env}
    os.environ.update(env)
    try:
        return pytester.runpytest_subprocess("-p", "no:cacheprovider", *UNRELATED, *args)
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


CASE = REPO / "examples" / "shop" / "cases" / "refund-4812.yaml"
DEFAULTS_TEST = f"""
import pytest
from examples.shop import agent, make_tools

@pytest.mark.replay(case="{CASE}")
def test_default(replay_session):
    assert replay_session.run(agent, make_tools).verdict == "pass"

@pytest.mark.replay(case="{CASE}")
@pytest.mark.parametrize("who", ["mia/li", "ünï code?"])
def test_param(replay_session, who):
    assert replay_session.run(agent, make_tools).verdict == "pass"

class TestShop:
    @pytest.mark.replay(case="{CASE}")
    def test_in_class(self, replay_session):
        assert replay_session.run(agent, make_tools).verdict == "pass"

@pytest.mark.replay
def test_case_by_default(replay_session):
    assert replay_session.cassette.name == "test_case_by_default.cassette"
    assert replay_session.run(agent, make_tools).verdict == "pass"

@pytest.mark.replay
def test_no_case_anywhere(replay_session):
    pass
"""


def test_cassette_and_case_default_to_the_tests_module_and_name(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(test_agent=DEFAULTS_TEST)
    cases = pytester.path / "cases" / "test_agent"
    cases.mkdir(parents=True)
    text = CASE.read_text().replace("../fixture.sql", str(CASE.parent.parent / "fixture.sql"))
    (cases / "test_case_by_default.yaml").write_text(text)
    with StubLLM(refund_policy()) as llm:
        result = run(pytester, "--replay-mode", "once", llm_url=llm.openai_base_url)
    result.assert_outcomes(passed=5, errors=1)  # the fixture refuses: a setup error
    expected = cases / "test_no_case_anywhere.yaml"
    result.stdout.fnmatch_lines(
        [f"*no case for the test: {expected} does not exist; name it with *(case=...)*"]
    )
    written = sorted(p.name for p in (pytester.path / "cassettes" / "test_agent").iterdir())
    assert written == [
        "TestShop.test_in_class.cassette",
        "test_case_by_default.cassette",
        "test_default.cassette",
        "test_param[-xfcn-xef-code-].cassette",  # pytest escapes the id's non-ASCII
        "test_param[mia-li].cassette",
    ]
    run(pytester).assert_outcomes(passed=5, errors=1)  # default none: offline, no LLM running


LOOKUP_TEST = f"""
import os
import pytest
from examples.shop import make_tools

def lookup(instruction, env):  # no LLM: its one tool call is the whole episode
    env.call_tool("lookup_order", {{"order_id": int(os.environ["ORDER"])}})
    return "looked it up"

@pytest.mark.replay(case="{CASE}")
def test_lookup(replay_session):
    outcome = replay_session.run(lookup, make_tools)
    unseen = bool(outcome.result.trial.unsupported)
    expected = (os.environ["RECORDED"] == "1", os.environ["UNSEEN"] == "1")
    assert (outcome.recorded, unseen) == expected
"""


def recorded_order(pytester: pytest.Pytester) -> int:
    path = pytester.path / "cassettes" / "test_lookup" / "test_lookup.cassette"
    (call,) = [e for e in read_cassette(path).events if isinstance(e, ToolEvent)]
    return int(call.args["order_id"])  # type: ignore[arg-type]


@pytest.mark.slow
@pytest.mark.parametrize(
    ("steps"),
    [
        [  # mode, order asked, recorded, unseen, the cassette's order after
            ("once", "4812", "1", "0", 4812),
            ("once", "4813", "0", "1", 4812),  # once replays: the new call is unseen
            ("new_episodes", "4812", "0", "0", 4812),
            ("new_episodes", "4813", "1", "0", 4813),  # a new path: recorded again
            ("none", "4813", "0", "0", 4813),
            ("offline", "4812", "0", "1", 4813),  # former name of none
            ("all", "4813", "1", "0", 4813),
            ("record", "4812", "1", "0", 4812),  # former name of all
            ("sandbox", "4813", "0", "0", 4812),  # live, the cassette untouched
        ]
    ],
    ids=["once-new_episodes-none-all-sandbox"],
)
def test_record_modes_as_pytest_recording_names_them(
    pytester: pytest.Pytester, steps: list[tuple[str, str, str, str, int]]
) -> None:
    pytester.makepyfile(test_lookup=LOOKUP_TEST)
    for mode, order, recorded, unseen, after in steps:
        env = {"ORDER": order, "RECORDED": recorded, "UNSEEN": unseen}
        result = run(pytester, "--replay-mode", mode, llm_url="http://127.0.0.1:9/v1", env=env)
        assert result.ret == 0, (mode, order, result.stdout.str())
        assert recorded_order(pytester) == after, mode


def test_recording_without_a_live_llm_and_an_unknown_mode_fail_in_one_line(
    pytester: pytest.Pytester,
) -> None:
    pytester.makepyfile(test_lookup=LOOKUP_TEST)
    env = {"ORDER": "4812", "RECORDED": "1", "UNSEEN": "0"}
    result = run(pytester, "--replay-mode", "once", env=env)
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines(
        ["*recording */test_lookup.cassette (it does not exist) needs a live LLM: pass llm_url=*"]
    )
    result = run(pytester, "--replay-mode", "sometimes", env=env)
    assert result.ret != 0
    result.stderr.fnmatch_lines(["*--replay-mode: invalid choice: 'sometimes'*"])
