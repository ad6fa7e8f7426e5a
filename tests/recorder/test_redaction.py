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
