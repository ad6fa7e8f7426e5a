"""One policy for every replay source: HTTP, tools and the frozen user answer once, then miss."""

from __future__ import annotations

import http.server
import threading
from collections.abc import Callable, Iterator
from contextlib import ExitStack
from pathlib import Path
from typing import Any

import httpx
import pytest

from recorder import (
    TOOL_MATCHERS,
    FixtureUnsupported,
    ToolRequest,
    UserEvent,
    playback,
    read_cassette,
    record,
    tool,
)
from replay.surroundings._player import ToolPlayer
from replay.surroundings._user import FrozenUser, UserChannel, UserSpec


@tool
def lookup(order_id: int) -> dict[str, Any]:
    """Look an order up."""
    lookup.calls += 1  # type: ignore[attr-defined]
    return {"order_id": order_id, "seen": lookup.calls}  # type: ignore[attr-defined]


class _Echo(http.server.BaseHTTPRequestHandler):
    disable_nagle_algorithm = True  # else Nagle and delayed ACKs add ~44 ms per request

    def do_GET(self) -> None:
        self.send_response(200)
        self.send_header("content-length", "2")
        self.end_headers()
        self.wfile.write(b"ok")

    def log_message(self, *args: object) -> None:
        pass


@pytest.fixture
def server() -> Iterator[str]:
    httpd = http.server.ThreadingHTTPServer(("127.0.0.1", 0), _Echo)
    thread = threading.Thread(target=httpd.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{httpd.server_address[1]}"
    finally:
        httpd.shutdown()
        httpd.server_close()


def _turn(said: str | None, reply: str) -> UserEvent:
    return UserEvent(t=0.0, duration=0.0, said=said, reply=reply, source="live", model="u")


Ask = Callable[[], Any]


def _http(path: Path, server: str, stack: ExitStack) -> tuple[Ask, list[FixtureUnsupported]]:
    with record(path), httpx.Client() as client:
        client.get(server + "/orders/7")
        client.get(server + "/orders/7")
    player = stack.enter_context(playback(path))
    client = stack.enter_context(httpx.Client())

    def ask() -> Any:
        return client.get(server + "/orders/7").text

    return ask, player.misses


def _tools(path: Path, server: str, stack: ExitStack) -> tuple[Ask, list[FixtureUnsupported]]:
    lookup.calls = 0  # type: ignore[attr-defined]
    with record(path):
        lookup(order_id=7)
        lookup(order_id=7)
    player = ToolPlayer(read_cassette(path))
    return (lambda: player.answer("lookup", {"order_id": 7.0}).result), player.misses


def _user(path: Path, server: str, stack: ExitStack) -> tuple[Ask, list[FixtureUnsupported]]:
    with record(path) as rec:
        rec.user_turn(_turn(None, "I want a refund"))
        rec.user_turn(_turn("Which order?", "Order 7"))
    user = FrozenUser(read_cassette(path))
    asked = iter([(0, None), (1, "Which order?"), (2, "Anything else?")])

    def ask() -> Any:
        return user.turn(*next(asked)).reply

    return ask, user.misses


@pytest.mark.parametrize(
    ("source", "answers", "miss"),
    [
        (
            _http,
            ["ok", "ok"],
            "this same request, recorded 2 times; all 2 answers are already used",
        ),
        (
            _tools,
            [{"order_id": 7, "seen": 1}, {"order_id": 7, "seen": 2}],
            "lookup(order_id=7.0); nearest recorded: this same request, recorded 2 times; "
            "all 2 answers are already used (a recorded answer is used once, never repeated)",
        ),
        (
            _user,
            ["I want a refund", "Order 7"],
            "user turn 3 (after 'Anything else?'); "
            "nearest recorded: the recording has 2 user turns",
        ),
    ],
    ids=["http", "tools", "user"],
)
def test_every_source_answers_each_recording_once_in_order_then_misses(
    source: Callable[[Path, str, ExitStack], tuple[Ask, list[FixtureUnsupported]]],
    answers: list[Any],
    miss: str,
    tmp_path: Path,
    server: str,
) -> None:
    with ExitStack() as stack:
        ask, misses = source(tmp_path / "trial.cassette", server, stack)
        assert [ask(), ask()] == answers
        with pytest.raises(FixtureUnsupported) as info:
            ask()
    assert miss in str(info.value)
    assert misses == [info.value]  # kept, in case the agent swallows the exception


def test_a_tool_call_past_its_recordings_names_the_count(tmp_path: Path) -> None:
    path = tmp_path / "trial.cassette"
    lookup.calls = 0  # type: ignore[attr-defined]
    with record(path):
        lookup(order_id=7)
    player = ToolPlayer(read_cassette(path))
    player.answer("lookup", {"order_id": 7})
    with pytest.raises(FixtureUnsupported, match=r"recorded once; its answer is already used"):
        player.answer("lookup", {"order_id": 7})
    with pytest.raises(FixtureUnsupported, match=r"lookup\(order_id=7\), differing in"):
        player.answer("lookup", {"order_id": 8})
    assert len(player.misses) == 2


def test_tool_keys_compose_with_a_registered_matcher(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = tmp_path / "trial.cassette"
    lookup.calls = 0  # type: ignore[attr-defined]
    with record(path):
        lookup(order_id=7)
        lookup(order_id=8)

    def order_id(call: ToolRequest) -> Any:
        return call.args.get("order_id")

    monkeypatch.setitem(TOOL_MATCHERS, "order_id", order_id)
    player = ToolPlayer(read_cassette(path), match_on=("name", "order_id"))
    # A request id the agent adds on replay is not part of the key: order_id is.
    assert player.answer("lookup", {"order_id": 8, "request_id": "x"}).result["seen"] == 2
    assert player.answer("lookup", {"order_id": 7, "request_id": "y"}).result["seen"] == 1
    with pytest.raises(FixtureUnsupported, match=r"differing in \['order_id'\]: 7 -> 9"):
        player.answer("lookup", {"order_id": 9})


def test_a_frozen_user_can_match_what_the_agent_said(tmp_path: Path) -> None:
    path = tmp_path / "trial.cassette"
    with record(path) as rec:
        rec.user_turn(_turn(None, "I want a refund"))
        rec.user_turn(_turn("Which order?", "Order 7"))
    spec = UserSpec(instruction="refund order 7")
    by_turn = UserChannel(spec, frozen=FrozenUser(read_cassette(path)))
    assert by_turn.opening() == "I want a refund"
    assert by_turn.say("What is the order number?") == "Order 7"  # by turn number: a warning
    assert len(by_turn.divergences) == 1
    strict = FrozenUser(read_cassette(path), match_on=("turn", "said"))
    user = UserChannel(spec, frozen=strict)
    assert user.opening() == "I want a refund"
    with pytest.raises(FixtureUnsupported, match=r"user turn 2 .*differing in said"):
        user.say("What is the order number?")
    assert len(strict.misses) == 1


def test_an_unknown_user_matcher_is_refused(tmp_path: Path) -> None:
    path = tmp_path / "trial.cassette"
    with record(path):
        pass
    with pytest.raises(ValueError, match="unknown matcher 'words' in match_on; known: said, turn"):
        FrozenUser(read_cassette(path), match_on=("words",))
