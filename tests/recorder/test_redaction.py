"""Secrets in headers, query and body never reach the cassette file."""

from __future__ import annotations

import json
import uuid
from pathlib import Path

import httpx
import pytest
import requests

from recorder import PLACEHOLDER, ConfigError, HttpEvent, Redaction, playback, read_cassette, record
from replay.stub_llm import StubLLM
from tests.helpers import decompressed


def secret(name: str) -> str:
    return f"SECRET-{name}-{uuid.uuid4().hex}"


def test_planted_secrets_never_appear_in_the_file(cassette_path: Path) -> None:
    planted = {
        name: secret(name)
        for name in (
            "authorization",
            "proxy-authorization",
            "x-api-key",
            "api-key",
            "cookie",
            "set-cookie",
            "q-key",
            "q-api_key",
            "q-token",
            "q-access_token",
            "body-api_key",
            "body-nested",
            "body-list",
            "response-body",
        )
    }

    def server(request: httpx.Request) -> httpx.Response:
        return httpx.Response(
            200,
            headers=[("set-cookie", f"session={planted['set-cookie']}"), ("x-request-id", "r1")],
            json={"ok": True, "session_token": planted["response-body"]},
        )

    redaction = Redaction(body_paths=("api_key", "auth.token", "items.*.secret", "session_token"))
    url = (
        f"http://svc.local/v1/act?key={planted['q-key']}&api_key={planted['q-api_key']}"
        f"&token={planted['q-token']}&access_token={planted['q-access_token']}&page=2"
    )
    body = {
        "api_key": planted["body-api_key"],
        "auth": {"token": planted["body-nested"], "user": "mia"},
        "items": [{"secret": planted["body-list"], "sku": "MUG-01"}],
    }
    headers = {
        "Authorization": f"Bearer {planted['authorization']}",
        "Proxy-Authorization": planted["proxy-authorization"],
        "X-Api-Key": planted["x-api-key"],
        "api-key": planted["api-key"],
        "Cookie": f"sid={planted['cookie']}",
    }
    with record(cassette_path, redaction=redaction):
        with httpx.Client(transport=httpx.MockTransport(server)) as client:
            reply = client.post(url, json=body, headers=headers)
    assert reply.json()["session_token"] == planted["response-body"]  # the agent saw the real one

    raw = cassette_path.read_bytes() + decompressed(cassette_path)
    for name, value in planted.items():
        assert value.encode() not in raw, f"{name} leaked"

    (event,) = [e for e in read_cassette(cassette_path).events if isinstance(e, HttpEvent)]
    sent = dict(event.request.headers)
    for name in ("authorization", "proxy-authorization", "x-api-key", "api-key", "cookie"):
        assert sent[name] == PLACEHOLDER
    assert "page=2" in event.request.url and event.request.url.count(PLACEHOLDER) == 4
    recorded_body = json.loads(event.request.body)
    assert recorded_body["auth"] == {"token": PLACEHOLDER, "user": "mia"}
    assert recorded_body["items"] == [{"secret": PLACEHOLDER, "sku": "MUG-01"}]
    assert event.response is not None
    assert dict(event.response.headers)["set-cookie"] == PLACEHOLDER
    assert dict(event.response.headers)["x-request-id"] == "r1"


def test_redacted_requests_still_match_in_playback(cassette_path: Path) -> None:
    body = {"model": "m", "messages": [{"role": "user", "content": "hi"}], "api_key": "one"}
    with StubLLM() as llm:
        url = llm.openai_base_url + "/chat/completions"
        with record(cassette_path, redaction=Redaction(body_paths=("api_key",))):
            live = requests.post(url + "?key=first", json=body, headers={"x-api-key": "a"}).json()
        # Different secrets, same request: the placeholder makes the keys equal.
        other = dict(body, api_key="two")
        with playback(cassette_path), httpx.Client() as client:
            replayed = client.post(url + "?key=second", json=other, headers={"x-api-key": "b"})
    assert replayed.json() == live


@pytest.mark.parametrize("path", ["", "a..b", ".a"])
def test_bad_body_path_is_a_config_error(path: str) -> None:
    with pytest.raises(ConfigError, match="not a dotted path"):
        Redaction(body_paths=(path,))


def test_secrets_are_scrubbed_from_errors_urls_and_echoes(cassette_path: Path) -> None:
    key, password = secret("key"), secret("pw")

    def server(request: httpx.Request) -> httpx.Response:
        # An API that echoes the key it was sent, as some error bodies do.
        return httpx.Response(401, json={"error": f"invalid key {key}"})

    with record(cassette_path), pytest.raises(httpx.HTTPStatusError):
        with httpx.Client(transport=httpx.MockTransport(server)) as client:
            client.get(
                f"http://bob:{password}@svc.local/v1/x?api_key={key}",
                headers={"x-api-key": key},
            ).raise_for_status()
    raw = cassette_path.read_bytes() + decompressed(cassette_path)
    assert key.encode() not in raw and password.encode() not in raw
    events = read_cassette(cassette_path).events
    (http,) = [e for e in events if isinstance(e, HttpEvent)]
    assert http.request.url.startswith("http://svc.local/")  # credentials gone, still a URL


@pytest.mark.parametrize("encoding", ["gzip", "sse"])
def test_body_paths_reach_encoded_and_streamed_responses(
    cassette_path: Path, encoding: str
) -> None:
    import gzip

    token = secret("token")
    if encoding == "gzip":
        body = gzip.compress(json.dumps({"token": token, "ok": 1}).encode())
        headers = [("content-encoding", "gzip"), ("content-type", "application/json")]
    else:
        body = b"".join(f'data: {{"i": {i}, "token": "{token}"}}\n\n'.encode() for i in range(3))
        headers = [("content-type", "text/event-stream")]

    def server(request: httpx.Request) -> httpx.Response:
        return httpx.Response(200, headers=headers, content=body)

    with record(cassette_path, redaction=Redaction(body_paths=("token",))):
        with httpx.Client(transport=httpx.MockTransport(server)) as client:
            assert token in client.get("http://svc.local/v1/x").text
    raw = cassette_path.read_bytes() + decompressed(cassette_path)
    assert token.encode() not in raw
    with playback(cassette_path), httpx.Client() as client:
        replayed = client.get("http://svc.local/v1/x").text
    assert PLACEHOLDER in replayed and token not in replayed


def test_custom_query_names_still_match_in_playback(cassette_path: Path) -> None:
    def server(request: httpx.Request) -> httpx.Response:
        return httpx.Response(200, json={"signed": True})

    redaction = Redaction(query=frozenset({"sig"}))
    with record(cassette_path, redaction=redaction):
        with httpx.Client(transport=httpx.MockTransport(server)) as client:
            client.get("http://svc.local/file?sig=abc123secret")
    with playback(cassette_path), httpx.Client() as client:
        assert client.get("http://svc.local/file?sig=other").json() == {"signed": True}


def test_cookies_and_their_attributes_are_not_scrubbed_from_bodies(cassette_path: Path) -> None:
    body = {"placed_at": "2025-02-27T09:34:48Z", "path": "/", "note": "Secure; HttpOnly"}

    def server(request: httpx.Request) -> httpx.Response:
        cookie = (
            f"session={uuid.uuid4().hex}; Path=/; Expires=Thu, 27 Feb 2025 09:34:48 GMT; Secure"
        )
        return httpx.Response(200, headers=[("set-cookie", cookie)], json=body)

    with record(cassette_path), httpx.Client(transport=httpx.MockTransport(server)) as client:
        for n in range(20):
            client.post("http://svc.local/v1/x", json={"n": n, "at": "09:34:48"})
    for event in read_cassette(cassette_path).events:
        assert isinstance(event, HttpEvent) and event.response is not None
        assert json.loads(b"".join(event.response.chunks)) == body
        assert b"09:34:48" in event.request.body
