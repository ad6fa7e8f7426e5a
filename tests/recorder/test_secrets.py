"""A secret the recorder learns (or is told) is scrubbed from every byte it writes.

Each test plants a secret along one path the issue found leaking, then scans the
whole cassette: its bytes, its record stream decompressed, and every HTTP body
decoded as its content-encoding says.
"""

from __future__ import annotations

import gzip
import json
import uuid
import zlib
from pathlib import Path
from typing import Any
from urllib.parse import quote_plus

import brotli
import httpx
import openai
import pytest

from recorder import (
    PLACEHOLDER,
    ConfigError,
    HttpEvent,
    HttpRequest,
    Redaction,
    Secrets,
    ToolEvent,
    llm_call,
    playback,
    read_cassette,
    record,
    tool,
)
from replay.stub_llm import Reply, ScriptedPolicy, StubLLM, ToolCall
from tests.helpers import decompressed


def secret(name: str) -> str:
    return f"sk-{name}-{uuid.uuid4().hex}"


def everything(path: Path) -> bytes:
    """Every byte of a cassette a reader could get at, bodies decoded too."""
    out = [path.read_bytes(), decompressed(path)]
    for event in read_cassette(path).events:
        if isinstance(event, HttpEvent) and event.response is not None:
            body = b"".join(event.response.chunks)
            encoding = dict(event.response.headers).get("content-encoding", "")
            decode = {"gzip": gzip.decompress, "deflate": zlib.decompress, "br": brotli.decompress}
            out.append(decode[encoding](body) if encoding in decode else body)
    return b"\n".join(out)


def leaked(path: Path, *planted: str) -> list[str]:
    found = everything(path)
    return [s for s in planted if s.encode() in found]


@tool
def charge(card: str) -> dict[str, Any]:
    """Charge a card; the payment API's error quotes the key it was given."""
    raise RuntimeError(f"payment API refused key {KEY['value']} for card {card}")


KEY: dict[str, str] = {}


def _agent(base_url: str, api_key: str) -> str:
    """A plain tool loop: a tool's error goes back to the model as ``{"error": str(exc)}``."""
    client = openai.OpenAI(base_url=base_url, api_key=api_key, max_retries=0)
    messages: list[Any] = [{"role": "user", "content": "charge card 4242"}]
    tools = [{"type": "function", "function": {"name": "charge", "parameters": {}}}]
    while True:
        reply = client.chat.completions.create(model="m", messages=messages, tools=tools)  # type: ignore[arg-type]
        message = reply.choices[0].message
        if not message.tool_calls:
            return message.content or ""
        messages.append(message.model_dump(exclude_none=True))
        for call in message.tool_calls:
            try:
                result: Any = charge(**json.loads(call.function.arguments))  # type: ignore[union-attr]
            except RuntimeError as exc:
                result = {"error": str(exc)}
            content = json.dumps(result)
            messages.append({"role": "tool", "tool_call_id": call.id, "content": content})


def test_a_key_in_a_tool_error_given_back_to_the_model_is_scrubbed_and_still_replays(
    cassette_path: Path,
) -> None:
    key = secret("api")
    KEY["value"] = key
    policy = ScriptedPolicy([Reply(tool_calls=(ToolCall("charge", {"card": "4242"}),))])
    with StubLLM(policy) as llm:
        with record(cassette_path):
            live = _agent(llm.openai_base_url, key)
        assert leaked(cassette_path, key) == []
        requests = [e for e in read_cassette(cassette_path).events if isinstance(e, HttpEvent)]
        assert PLACEHOLDER.encode() in requests[1].request.body  # the error went to the model
        # Offline, with another key: the scrubbed bodies still match, no LLM needed.
        other = secret("other")
        KEY["value"] = other
        with playback(cassette_path):
            assert _agent(llm.openai_base_url, other) == live


def test_secrets_given_are_scrubbed_from_tool_args_results_errors_and_answers(
    cassette_path: Path,
) -> None:
    given = secret("given")

    @tool
    def lookup(token: str) -> dict[str, str]:
        return {"echo": token, "nested": {"list": [f"x{given}y"]}}

    @tool
    def fail(token: str) -> None:
        raise ValueError(f"bad token {token}")

    with record(cassette_path, secrets=[given], pins={"note": given}) as rec:
        assert lookup(given)["echo"] == given  # the agent sees the real value
        with pytest.raises(ValueError, match="bad token"):
            fail(given)
        rec.warn(f"a warning quoting {given}")
        rec.answer(f"done with {given}")
    assert leaked(cassette_path, given) == []
    cassette = read_cassette(cassette_path)
    (first, _) = [e for e in cassette.events if isinstance(e, ToolEvent)]
    assert first.args == {"token": PLACEHOLDER}
    assert first.result == {"echo": PLACEHOLDER, "nested": {"list": [f"x{PLACEHOLDER}y"]}}
    assert cassette.footer is not None
    assert cassette.footer.final_answer == f"done with {PLACEHOLDER}"


def _echo_server(key: str, how: str) -> httpx.MockTransport:
    text = json.dumps({"error": f"invalid key {key}"}).encode()

    def server(request: httpx.Request) -> httpx.Response:
        if how == "header":
            return httpx.Response(401, headers={"x-echo": f"got {key}"}, json={})
        if how == "split":  # the key cut in two across chunks
            cut = text.index(key.encode()) + 10
            return httpx.Response(401, content=iter([text[:cut], text[cut:]]))
        encode = {"gzip": gzip.compress, "deflate": zlib.compress, "br": brotli.compress}[how]
        return httpx.Response(401, headers={"content-encoding": how}, content=encode(text))

    return httpx.MockTransport(server)


@pytest.mark.parametrize("how", ["gzip", "deflate", "br", "split", "header"])
def test_an_echoed_key_is_scrubbed_encoded_split_or_in_a_header(
    cassette_path: Path, how: str
) -> None:
    key = secret(how)
    with record(cassette_path), httpx.Client(transport=_echo_server(key, how)) as client:
        reply = client.get("http://svc.local/v1/x", headers={"authorization": f"Bearer {key}"})
        assert key in reply.text or key in reply.headers.get("x-echo", "")  # the agent saw it
    assert leaked(cassette_path, key) == []
    if how == "split":  # the chunks stay as they came, the key gone from both
        (event,) = [e for e in read_cassette(cassette_path).events if isinstance(e, HttpEvent)]
        assert event.response is not None and len(event.response.chunks) == 2


def test_url_credentials_leave_the_url_and_llm_parsing_still_works(cassette_path: Path) -> None:
    user, password = "svc-account", secret("pw")
    with StubLLM(ScriptedPolicy([Reply(content="hello")])) as llm:
        base = llm.openai_base_url.replace("http://", f"http://{user}:{password}@")
        with record(cassette_path), httpx.Client() as client:
            client.post(
                base + "/chat/completions",
                json={"model": "m", "messages": [{"role": "user", "content": f"pw {password}"}]},
            )
    assert leaked(cassette_path, password, f"{user}:{password}") == []
    cassette = read_cassette(cassette_path)
    (event,) = [e for e in cassette.events if isinstance(e, HttpEvent)]
    assert "@" not in event.request.url and event.request.url.startswith("http://127.0.0.1:")
    call = llm_call(event)
    assert call is not None and call.model == "m" and call.reply_text == "hello"
    assert cassette.footer is not None and cassette.footer.usage.llm_calls == 1


def test_tool_paths_redact_args_and_results_and_the_value_is_scrubbed_elsewhere(
    cassette_path: Path,
) -> None:
    card, ssn = "4242424242424242", "123-45-6789"

    @tool
    def customer(card_number: str) -> dict[str, Any]:
        return {"name": "Mia", "ssn": ssn, "card_number": card_number}

    redaction = Redaction(tool_paths=("*.args.card_number", "customer.result.ssn"))
    transport = httpx.MockTransport(lambda r: httpx.Response(200, json={"ok": 1}))
    with record(cassette_path, redaction=redaction), httpx.Client(transport=transport) as client:
        found = customer(card)
        assert found["ssn"] == ssn
        client.post("http://llm.local/v1/chat/completions", json={"seen": found})
    assert leaked(cassette_path, card, ssn) == []
    (event,) = [e for e in read_cassette(cassette_path).events if isinstance(e, ToolEvent)]
    assert event.args == {"card_number": PLACEHOLDER}
    assert event.result == {"name": "Mia", "ssn": PLACEHOLDER, "card_number": PLACEHOLDER}


@pytest.mark.parametrize("path", ["x.args", "x.body.a", "*.result", "a..b"])
def test_a_bad_tool_path_is_a_config_error(path: str) -> None:
    with pytest.raises(ConfigError, match="path"):
        Redaction(tool_paths=(path,))


def test_a_url_recorded_with_its_credentials_as_a_placeholder_reads_as_a_url() -> None:
    # Before format 5 credentials became "[REDACTED]@", which urlsplit refuses.
    request = HttpRequest(method="POST", url=f"http://{PLACEHOLDER}@127.0.0.1:9/v1/x", headers=[])
    assert request.url == "http://127.0.0.1:9/v1/x"


def test_a_secret_deep_escaped_or_in_a_second_gzip_member_is_scrubbed(cassette_path: Path) -> None:
    key = 'sk-päss"word\\12345+/='
    deep: Any = f"x {key}"
    for _ in range(90):  # (deeper than 100 is not recorded: the recording stops)
        deep = [deep]

    @tool
    def nested() -> Any:
        return deep

    body = gzip.compress(b'{"a": "first",') + gzip.compress(f'"b": "{key}"}}'.encode())
    transport = httpx.MockTransport(
        lambda r: httpx.Response(200, headers={"content-encoding": "gzip"}, content=body)
    )
    with record(cassette_path, secrets=[key]), httpx.Client(transport=transport) as client:
        assert nested() is deep  # the agent gets its value, however deep
        client.post("http://svc.local/v1/x", json={"quoted": key})
        client.post("http://svc.local/v1/y", content=f"form={quote_plus(key)}".encode())
        client.get("http://svc.local/v1/z")  # (httpx itself reads the first member only)
    found = everything(cassette_path)
    forms = [key, json.dumps(key)[1:-1], json.dumps(key, ensure_ascii=False)[1:-1]]
    for form in [*forms, quote_plus(key)]:
        assert form.encode() not in found, form


def test_a_tool_result_that_cannot_be_recorded_stops_the_recording_not_the_agent(
    cassette_path: Path,
) -> None:
    deep: Any = 1
    for _ in range(300):
        deep = [deep]

    @tool
    def nested() -> Any:
        return deep

    with record(cassette_path):
        assert nested() is deep
    footer = read_cassette(cassette_path).footer
    assert footer is not None and footer.stopped is not None
    assert footer.stopped.lost == "tool nested"


def test_secrets_beyond_ascii_are_scrubbed_from_text_bytes_and_split_chunks() -> None:
    # Bytes are searched as Latin-1 text, in the index that holds the text: each secret's
    # UTF-8 bytes, read as Latin-1, are filed beside it.
    keys = ["geheimnis-schlüssel-42", "ключ-доступа-7", "plain-ascii-token-99"]
    seen = Secrets(keys)
    for key in keys:
        text = f"before {key} after"
        assert seen.scrub(text) == f"before {PLACEHOLDER} after"
        data = text.encode()
        assert seen.scrub_bytes(data) == f"before {PLACEHOLDER} after".encode()
        cut = data.index(key.encode()) + 5  # inside the key, inside a character for some
        chunks = seen.scrub_chunks([data[:cut], data[cut:]])
        assert b"".join(chunks) == f"before {PLACEHOLDER} after".encode() and len(chunks) == 2
    assert seen.scrub_bytes("schlüssel alone".encode()) == "schlüssel alone".encode()
