"""HTTP playback as a replay source: each answer used once, named and composable match keys."""

from __future__ import annotations

import http.server
import threading
from collections.abc import Iterator
from pathlib import Path
from urllib.parse import parse_qsl, urlencode, urlsplit, urlunsplit

import httpx
import pytest

from recorder import (
    HTTP_MATCHERS,
    FixtureUnsupported,
    HttpRequest,
    Playback,
    RecordedAnswers,
    playback,
    record,
)


class _Counting(http.server.BaseHTTPRequestHandler):
    """Answers every request with its number: which recorded answer came back is visible."""

    disable_nagle_algorithm = True  # else Nagle and delayed ACKs add ~44 ms per request
    served = 0

    def _answer(self) -> None:
        length = int(self.headers.get("content-length") or 0)
        self.rfile.read(length)
        type(self).served += 1
        body = f"answer {type(self).served}".encode()
        self.send_response(200)
        self.send_header("content-length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    do_GET = do_POST = _answer

    def log_message(self, *args: object) -> None:
        pass


@pytest.fixture
def server() -> Iterator[str]:
    handler = type("Counting", (_Counting,), {"served": 0})
    httpd = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    thread = threading.Thread(target=httpd.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{httpd.server_address[1]}"
    finally:
        httpd.shutdown()
        httpd.server_close()


CHAT = {"model": "m", "messages": [{"role": "user", "content": "Order 2 mugs"}]}


def test_identical_requests_get_the_recorded_answers_in_order_then_miss(
    server: str, cassette_path: Path
) -> None:
    with record(cassette_path), httpx.Client() as client:
        for _ in range(2):
            client.post(server + "/v1/chat/completions", json=CHAT)
    with playback(cassette_path) as player, httpx.Client() as client:
        answers = [client.post(server + "/v1/chat/completions", json=CHAT).text for _ in "ab"]
        with pytest.raises(FixtureUnsupported) as info:
            client.post(server + "/v1/chat/completions", json=CHAT)
    assert answers == ["answer 1", "answer 2"]  # each recorded answer once, in recorded order
    message = str(info.value)
    assert message.startswith(f"fixture unsupported: POST {server}/v1/chat/completions (")
    assert "this same request, recorded 2 times; all 2 answers are already used" in message
    assert "never repeated" in message
    assert player.misses == [info.value]


def test_the_last_answer_is_never_repeated(server: str, cassette_path: Path) -> None:
    with record(cassette_path), httpx.Client() as client:
        client.get(server + "/health")
    with playback(cassette_path) as player, httpx.Client() as client:
        assert client.get(server + "/health").text == "answer 1"
        with pytest.raises(FixtureUnsupported, match="recorded once; its answer is already used"):
            client.get(server + "/health")
        with pytest.raises(FixtureUnsupported):  # an SDK's retry is a miss again, not an answer
            client.get(server + "/health")
    assert len(player.misses) == 2 and len({str(m) for m in player.misses}) == 1


def _without_ts(request: HttpRequest) -> str:
    """The URL without its ``ts`` query parameter (a timestamp that changes every run)."""
    parts = urlsplit(request.url)
    query = [(k, v) for k, v in parse_qsl(parts.query, keep_blank_values=True) if k != "ts"]
    return urlunsplit(parts._replace(query=urlencode(query)))


def test_a_registered_matcher_ignores_a_query_parameter(
    server: str, cassette_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setitem(HTTP_MATCHERS, "url_without_ts", _without_ts)
    with record(cassette_path), httpx.Client() as client:
        client.get(server + "/search", params={"q": "mugs", "ts": "1700000000"})
    later = {"q": "mugs", "ts": "1800000000"}
    with playback(cassette_path), httpx.Client() as client:
        with pytest.raises(FixtureUnsupported):  # the default keys compare the whole URL
            client.get(server + "/search", params=later)
    keys = ("method", "url_without_ts", "body")
    with playback(cassette_path, match_on=keys) as player, httpx.Client() as client:
        assert client.get(server + "/search", params=later).text == "answer 1"
        with pytest.raises(FixtureUnsupported):
            client.get(server + "/search", params={"q": "plates", "ts": "1800000000"})
    assert len(player.misses) == 1


def test_keys_compose_a_moved_endpoint_still_answers_and_the_body_still_counts(
    server: str, cassette_path: Path
) -> None:
    with record(cassette_path), httpx.Client() as client:
        client.post(server + "/v1/chat/completions", json=CHAT)
    moved = "http://127.0.0.1:9/v1/chat/completions"  # never contacted: playback answers
    other = {**CHAT, "messages": [{"role": "user", "content": "Order 3 mugs"}]}
    with playback(cassette_path, match_on=("method", "path", "body")), httpx.Client() as client:
        assert client.post(moved, json=CHAT).text == "answer 1"
        with pytest.raises(FixtureUnsupported) as info:
            client.post(moved, json=other)
    # The nearest-miss message still names the differing JSON path, under the keys in use.
    assert (
        "nearest recorded: same method and path, 67 body bytes, differing in "
        'messages[0].content: "Order 2 mugs" -> "Order 3 mugs"'
    ) in str(info.value)


def test_the_default_keys_name_the_differing_json_path(server: str, cassette_path: Path) -> None:
    with record(cassette_path), httpx.Client() as client:
        client.post(server + "/v1/chat/completions", json=CHAT)
    with playback(cassette_path), httpx.Client() as client:
        with pytest.raises(FixtureUnsupported) as info:
            client.post(server + "/v1/chat/completions", json={**CHAT, "model": "n"})
    assert 'same method and URL, 67 body bytes, differing in model: "m" -> "n"' in str(info.value)


def test_keys_without_the_body_name_the_matchers_that_differ(
    server: str, cassette_path: Path
) -> None:
    with record(cassette_path), httpx.Client() as client:
        client.get(server + "/a")
    with playback(cassette_path, match_on=("method", "path")), httpx.Client() as client:
        with pytest.raises(FixtureUnsupported) as info:
            client.get(server + "/b")
    assert f"nearest recorded: GET {server}/a (0 body bytes), differing in path" in str(info.value)


def test_an_unknown_matcher_is_refused_with_the_known_names(cassette_path: Path) -> None:
    with record(cassette_path):
        pass
    with pytest.raises(ValueError, match=r"unknown matcher 'uri' in match_on; known: body, "):
        Playback(cassette_path, match_on=("method", "uri"))
    with pytest.raises(TypeError, match="not a string"):
        Playback(cassette_path, match_on="url")


def test_a_source_reads_its_registry_once() -> None:
    registry = {"word": lambda r: r}
    answers: RecordedAnswers[str, int] = RecordedAnswers(
        [("a", 1), ("b", 2), ("a", 3)], match_on=("word",), matchers=registry
    )
    registry["word"] = lambda r: "a"  # a later change to the registry changes no built source
    assert [answers.answer("a"), answers.answer("b"), answers.answer("a")] == [1, 2, 3]
    with pytest.raises(FixtureUnsupported, match="'c'; nearest recorded: 'a', differing in word"):
        answers.answer("c")
    assert len(answers.misses) == 1
