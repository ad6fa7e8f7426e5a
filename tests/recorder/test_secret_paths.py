"""Secrets that reached cassettes by paths the README said were covered (issue 29, point 10).

Each test sends a secret with a real client (requests, httpx) to a local server
that echoes everything it got back in its response body, decoded: the cookie
values, the Basic auth password, the form fields, every header. The whole
cassette (its bytes, its record stream decompressed, every body) must hold none.
"""

from __future__ import annotations

import base64
import http.server
import json
import threading
import uuid
from collections.abc import Iterator
from pathlib import Path
from urllib.parse import parse_qsl

import httpx
import pytest
import requests

from recorder import PLACEHOLDER, HttpEvent, _codec, playback, read_cassette, record, secret_named


def secret(name: str) -> str:
    return f"{name}-{uuid.uuid4().hex}"


def everything(path: Path) -> bytes:
    """Every byte of a cassette a reader could get at, bodies too."""
    data = path.read_bytes()
    out = [data, _codec.decompressed(data)]
    for event in read_cassette(path).events:
        if isinstance(event, HttpEvent) and event.response is not None:
            out.append(b"".join(event.response.chunks))
    return b"\n".join(out)


def leaked(path: Path, *planted: str) -> list[str]:
    found = everything(path)
    return [s for s in planted if s.encode() in found]


class _Echo(http.server.BaseHTTPRequestHandler):
    """Answers with what it was sent, decoded: a server that echoes credentials."""

    def _echo(self) -> None:
        body = self.rfile.read(int(self.headers.get("content-length") or 0)).decode()
        auth = self.headers.get("authorization", "")
        basic = base64.b64decode(auth[6:]).decode() if auth.startswith("Basic ") else ""
        cookies = [p.partition("=")[2] for p in self.headers.get("cookie", "").split(";")]
        echoed = {
            "headers": dict(self.headers),
            "basic": basic.split(":", 1),
            "cookies": cookies,
            "form": dict(parse_qsl(body)),
            "body": body,
        }
        out = json.dumps(echoed).encode()
        self.send_response(200)
        self.send_header("content-type", "application/json")
        self.send_header("x-ratelimit-remaining-tokens", "99000")
        self.send_header("content-length", str(len(out)))
        self.end_headers()
        self.wfile.write(out)

    do_GET = do_POST = _echo

    def log_message(self, *args: object) -> None:
        pass


@pytest.fixture(scope="module")
def echo() -> Iterator[str]:
    """The address of a local server echoing every request."""
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), _Echo)
    threading.Thread(target=server.serve_forever, args=(0.02,), daemon=True).start()
    yield f"127.0.0.1:{server.server_port}"
    server.shutdown()
    server.server_close()


def _request_headers(path: Path) -> list[dict[str, str]]:
    events = [e for e in read_cassette(path).events if isinstance(e, HttpEvent)]
    return [dict(e.request.headers) for e in events]


def test_a_cookie_value_echoed_in_a_response_body_is_scrubbed(
    echo: str, cassette_path: Path
) -> None:
    by_requests, by_httpx = secret("cookie-a"), secret("cookie-b")
    with record(cassette_path):
        requests.get(f"http://{echo}/me", cookies={"sessionid": by_requests, "lang": "en"})
        httpx.get(f"http://{echo}/me", headers={"Cookie": f"theme=dark; sid={by_httpx}"})
    assert leaked(cassette_path, by_requests, by_httpx) == []
    assert [h["cookie"] for h in _request_headers(cassette_path)] == [PLACEHOLDER] * 2


@pytest.mark.parametrize("client", ["requests", "httpx"])
def test_the_password_of_a_url_sent_as_basic_auth_is_scrubbed(
    client: str, echo: str, cassette_path: Path
) -> None:
    user, password = secret("user"), secret("pw")
    url = f"http://{user}:{password}@{echo}/private"
    with record(cassette_path):
        answer = requests.get(url) if client == "requests" else httpx.get(url)
    assert answer.json()["basic"] == [user, password]  # the server got them, decoded
    assert leaked(cassette_path, user, password) == []
    (headers,) = _request_headers(cassette_path)
    assert headers["authorization"] == PLACEHOLDER


@pytest.mark.parametrize("client", ["requests", "httpx"])
def test_form_fields_named_like_secrets_are_redacted_and_still_replay(
    client: str, echo: str, cassette_path: Path
) -> None:
    key, client_secret = secret("form-key"), secret("form-secret")
    form = {"api_key": key, "client_secret": client_secret, "note": "hello world"}
    post = requests.post if client == "requests" else httpx.post
    with record(cassette_path):
        assert post(f"http://{echo}/token", data=form).json()["form"] == form
    assert leaked(cassette_path, key, client_secret) == []
    (event,) = [e for e in read_cassette(cassette_path).events if isinstance(e, HttpEvent)]
    assert event.request.body == b"api_key=[REDACTED]&client_secret=[REDACTED]&note=hello+world"
    # Playback redacts the live form the same way: another key matches the recording.
    other = {**form, "api_key": secret("other-key")}
    with playback(cassette_path):
        assert post(f"http://{echo}/token", data=other).json()["form"]["note"] == "hello world"


def test_headers_named_like_secrets_are_redacted_and_others_kept(
    echo: str, cassette_path: Path
) -> None:
    goog, auth, csrf = secret("goog"), secret("auth"), secret("csrf")
    sent = {
        "x-goog-api-key": goog,
        "X-Auth-Token": auth,
        "X-CSRFToken": csrf,
        "Idempotency-Key": "retry-0123456789",
        "x-request-id": "req-0123456789",
    }
    with record(cassette_path):
        httpx.get(f"http://{echo}/models", headers=sent)
        requests.get(f"http://{echo}/models", headers=sent)
    assert leaked(cassette_path, goog, auth, csrf) == []
    for headers in _request_headers(cassette_path):
        assert headers["x-goog-api-key"] == headers["x-auth-token"] == PLACEHOLDER
        assert headers["x-csrftoken"] == PLACEHOLDER
        assert headers["idempotency-key"] == "retry-0123456789"  # a nonce, not a credential
        assert headers["x-request-id"] == "req-0123456789"
    for event in read_cassette(cassette_path).events:
        assert isinstance(event, HttpEvent) and event.response is not None
        assert dict(event.response.headers)["x-ratelimit-remaining-tokens"] == "99000"


@pytest.mark.parametrize(
    "name",
    [
        "OPENAI_API_KEY",
        "api_key",
        "apiKey",
        "x-goog-api-key",
        "GITHUBTOKEN",
        "githubToken",
        "--auth-token",
        "client_secret",
        "DB_PASSWORD",
        "MYSQL_PWD",
        "PGPASSWORD",
        "SMTP_PASSWD",
        "GOOGLE_APPLICATION_CREDENTIALS",
        "STRIPE_SK",
        "SENTRY_DSN",
        "authorization",
        "Cookie",
        "set-cookie",
        "SSH_AUTH_SOCK",
        "JWT",
    ],
)
def test_names_of_secrets(name: str) -> None:
    assert secret_named(name)


@pytest.mark.parametrize(
    "name",
    [
        "PWD",
        "OLDPWD",
        "PATH",
        "max_tokens",
        "keyword",
        "MONKEY",
        "TOKENIZERS_PARALLELISM",
        "x-ratelimit-remaining-tokens",
        "XDG_SESSION_TYPE",
        "pass_k",
        "Idempotency-Key",
        "Sec-WebSocket-Key",
        "www-authenticate",
        "DATABASE_URL",
    ],
)
def test_names_that_are_not_secrets(name: str) -> None:
    assert not secret_named(name)


@pytest.mark.parametrize(
    ("value", "is_secret"),
    [
        ("postgres://u:pw@h/db", True),
        ("redis://:pw@cache:6379/0", True),
        ("https://user:tok@example.com/simple", True),
        ("ssh://git@github.com/org/repo", False),
        ("sqlite:///data/app.db", False),
        ("https://example.com/?a=b@c", False),
        ("not a url: x@y", False),
    ],
)
def test_a_url_with_a_password_is_a_secret_whatever_its_name(value: str, is_secret: bool) -> None:
    assert secret_named("DATABASE_URL", value) is is_secret
    assert secret_named("anything", value) is is_secret
