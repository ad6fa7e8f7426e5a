"""Multi-turn cases: a simulated user, live then frozen, recorded turn by turn."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from examples.shop import RefundChatPolicy
from recorder import Cassette, ToolEvent, UserEvent, WarningEvent, read_cassette
from replay import Store
from replay.stub_llm import Fail, StubLLM
from tests.helpers import REPO, replay

CASE = str(REPO / "examples" / "shop" / "cases" / "refund-chat.yaml")
AGENT = ["--agent", "examples.shop:agent", "--tools", "examples.shop:make_tools"]
DEAD = "http://127.0.0.1:9/v1"  # nothing listens: a frozen channel must not call it


def trajectory(cassette: Cassette) -> list[Any]:
    """The decisions and the conversation, in order: what must replay identically."""
    out: list[Any] = []
    for event in sorted(cassette.events, key=lambda e: e.t):
        if isinstance(event, ToolEvent):
            out.append(("tool", event.name, json.dumps(event.args, sort_keys=True)))
        elif isinstance(event, UserEvent):
            out.append(("user", event.said, event.reply, event.stop))
    return out


def run(store: str, name: str, *args: str) -> Cassette:
    code, _, err = replay("run", CASE, "--run", name, "--store", store, *AGENT, *args)
    assert code == 0, err
    (trial,) = Store(store).trials(name)
    assert trial.verdict == "pass", trial.grades
    return read_cassette(Path(trial.cassette))


@pytest.fixture
def recorded(tmp_path: Path) -> tuple[str, Path, Cassette]:
    store, out = str(tmp_path / "r.db"), tmp_path / "cassettes" / "live"  # beside the store
    with StubLLM(RefundChatPolicy()) as llm:
        cassette = run(store, "live", "--llm-url", llm.openai_base_url)
    return store, out, cassette


def test_a_live_user_is_recorded_turn_by_turn(recorded: tuple[str, Path, Cassette]) -> None:
    _, _, cassette = recorded
    turns = [e for e in cassette.events if isinstance(e, UserEvent)]
    assert [(t.said is None, t.reply, t.stop, t.source) for t in turns] == [
        (True, "Hi, I'd like a refund for my order, it was the wrong size.", False, "live"),
        (False, "It's order 4812.", False, "live"),
        (False, "Thank you, that's all.", True, "live"),
    ]
    assert turns[1].said == "Sure, which order number is it?"
    assert cassette.summary().usage.user_turns == 3
    # The user's traffic is its own channel: not among the agent's LLM calls.
    assert cassette.summary().usage.llm_calls == 7
    code, out, _ = replay("show", str(cassette.path))
    assert code == 0 and "user (live, user-sim)" in out and "user: It's order 4812." in out


def test_a_frozen_user_replays_the_same_trajectory_for_the_same_agent(
    recorded: tuple[str, Path, Cassette], tmp_path: Path
) -> None:
    store, out, original = recorded
    with StubLLM(RefundChatPolicy()) as llm:  # the agent's model is live; the user is frozen
        again = run(
            store, "frozen-user", "--llm-url", llm.openai_base_url, "--user", "frozen",
            "--user-url", DEAD, "--cassettes", str(out),
        )  # fmt: skip
    assert trajectory(again) == trajectory(original)
    assert {e.source for e in again.events if isinstance(e, UserEvent)} == {"frozen"}
    assert not [e for e in again.events if isinstance(e, WarningEvent)]
    # Offline, with the LLM and the user both frozen: the same again, and no endpoint at all.
    offline = run(
        store, "offline", "--mode", "offline", "--llm-url", DEAD, "--user", "frozen",
        "--cassettes", str(out),
    )  # fmt: skip
    assert trajectory(offline) == trajectory(original)


def test_an_agent_only_change_replays_against_the_same_user(
    recorded: tuple[str, Path, Cassette],
) -> None:
    store, out, original = recorded
    with StubLLM(RefundChatPolicy(ask="What is the order number, please?")) as llm:
        changed = run(
            store, "agent-v2", "--llm-url", llm.openai_base_url, "--user", "frozen",
            "--cassettes", str(out),
        )  # fmt: skip
    users = [(e.reply, e.stop) for e in changed.events if isinstance(e, UserEvent)]
    assert users == [(e.reply, e.stop) for e in original.events if isinstance(e, UserEvent)]
    (warning,) = [e.message for e in changed.events if isinstance(e, WarningEvent)]
    assert "frozen user, turn 2: the agent said 'What is the order number, please?'" in warning


def test_a_failing_simulated_user_is_reported_apart_from_the_agent(tmp_path: Path) -> None:
    store = str(tmp_path / "r.db")
    with StubLLM(RefundChatPolicy()) as llm, StubLLM(lambda request: Fail(500)) as user:
        code, _, err = replay(
            "run", CASE, "--run", "r", "--store", store, "--llm-url", llm.openai_base_url,
            "--user-url", user.openai_base_url, *AGENT,
        )  # fmt: skip
    assert code == 3, err  # the user's failure, not the agent's
    (trial,) = Store(store).trials("r")
    assert trial.verdict == "error"  # out of the pass rates
    assert trial.cause == "user"  # the user's fault, not a grader's verdict
    assert trial.cause_detail == ("the simulated user failed: its endpoint answered HTTP 500",)
    assert trial.grades == ()  # nothing was graded: the conversation was cut
    _, out, _ = replay("report", "r", "--store", store)
    assert (
        "refund-chat: the simulated user failed (error trials, not counted against the agent)"
        in out
    )
    assert "failed because" not in out
    _, out, _ = replay("report", "r", "--store", store, "--json")
    (case,) = json.loads(out)["cases"]
    assert case["failures"] == [] and case["user_failures"][0]["trials"] == 1


def test_a_frozen_user_past_its_recording_is_unsupported(
    recorded: tuple[str, Path, Cassette],
) -> None:
    from types import SimpleNamespace

    from recorder import FixtureUnsupported
    from replay import load_case
    from replay.surroundings._user import FrozenUser, UserChannel

    _, _, cassette = recorded
    cut = [e for e in cassette.events if not (isinstance(e, UserEvent) and e.stop)]
    spec = load_case(CASE).user
    assert spec is not None
    user = UserChannel(spec, frozen=FrozenUser(SimpleNamespace(events=cut, path=None)))  # type: ignore[arg-type]
    assert user.opening().startswith("Hi, I'd like a refund")
    assert user.say("Sure, which order number is it?") == "It's order 4812."
    with pytest.raises(FixtureUnsupported, match="user turn 3"):
        user.say("I refunded it.")
    assert user.frozen is not None and len(user.frozen.misses) == 1


def test_a_bare_stop_is_a_turn_a_frozen_user_replays(
    recorded: tuple[str, Path, Cassette],
) -> None:
    from types import SimpleNamespace

    from replay import load_case
    from replay.surroundings._user import FrozenUser, UserChannel

    _, _, cassette = recorded
    bare = [e.model_copy(update={"reply": ""}) if isinstance(e, UserEvent) and e.stop else e
            for e in cassette.events]  # fmt: skip
    spec = load_case(CASE).user
    assert spec is not None
    user = UserChannel(spec, frozen=FrozenUser(SimpleNamespace(events=bare, path=None)))  # type: ignore[arg-type]
    user.opening()
    assert user.say("Sure, which order number is it?") == "It's order 4812."
    assert user.say("Refunded.") is None and user.ended  # the stop, though it said nothing


def test_a_walled_agent_talks_with_the_user_through_its_channel(
    tmp_path: Path, recorded: tuple[str, Path, Cassette]
) -> None:
    """``--isolation process``: ``env.user.say`` is a request to ``REPLAY_USER_URL``."""
    from replay.agents import unavailable

    if unavailable() is not None:
        pytest.skip(f"isolation is unavailable here: {unavailable()}")
    _, _, in_process = recorded
    store = str(tmp_path / "walled.db")
    with StubLLM(RefundChatPolicy()) as llm:
        walled = run(store, "walled", "--llm-url", llm.openai_base_url, "--isolation", "process")
    assert trajectory(walled) == trajectory(in_process)
