"""Hosts a cassette ignores: never recorded, counted, answered locally where the session answers."""

from __future__ import annotations

from pathlib import Path

import httpx
import pytest

from recorder import HttpEvent, SandboxViolation, playback, read_cassette, record
from replay.stub_llm import StubLLM


def _post_trace(client: httpx.Client, base: str) -> httpx.Response:
    return client.post(base + "/v1/traces/ingest", json={"data": [{"span": 1}]})


def test_an_ignored_host_goes_out_live_unrecorded_and_counted(cassette_path: Path) -> None:
    with StubLLM() as llm:
        with record(cassette_path, ignore_hosts=["127.0.0.1/v1/traces"]), httpx.Client() as c:
            assert _post_trace(c, llm.url).status_code == 404  # the stub's own answer: live
            c.post(llm.openai_base_url + "/chat/completions", json={"model": "m", "messages": []})
        chat = llm.openai_base_url + "/chat/completions"
    cassette = read_cassette(cassette_path)
    assert [e.request.url for e in cassette.events if isinstance(e, HttpEvent)] == [chat]
    assert cassette.header.ignore_hosts == ["127.0.0.1/v1/traces"]
    assert cassette.footer is not None
    assert cassette.footer.usage.ignored == {"127.0.0.1/v1/traces": 1}


def test_the_default_list_covers_the_sdks_tracing_endpoints(cassette_path: Path) -> None:
    with record(cassette_path):
        pass
    ignored = read_cassette(cassette_path).header.ignore_hosts or []
    assert "api.openai.com/v1/traces" in ignored
    assert "api.smith.langchain.com" in ignored


def test_playback_answers_an_ignored_host_and_never_misses(cassette_path: Path) -> None:
    with record(cassette_path):
        pass  # nothing recorded at all
    with playback(cassette_path) as player, httpx.Client() as client:
        response = client.post(
            "https://api.openai.com/v1/traces/ingest", json={"data": [{"span": 1}]}
        )
        assert response.status_code == 200 and response.json() == {}
        with pytest.raises(Exception, match="fixture unsupported"):
            client.post("https://api.openai.com/v1/responses", json={"model": "m"})
    assert player.ignored_calls == {"api.openai.com/v1/traces": 1}
    assert len(player.misses) == 1


def test_the_sandbox_answers_an_ignored_host_instead_of_refusing_it(tmp_path: Path) -> None:
    path = tmp_path / "sandbox.cassette"
    with record(path, allowed_hosts=["127.0.0.1"]), httpx.Client() as client:
        assert client.post("https://api.smith.langchain.com/runs/batch", json={}).status_code == 200
        with pytest.raises(SandboxViolation):
            client.get("https://example.com/")
    cassette = read_cassette(path)
    assert cassette.footer is not None
    assert cassette.footer.usage.ignored == {"api.smith.langchain.com": 1}
    (refused,) = [e for e in cassette.events if isinstance(e, HttpEvent)]
    assert refused.request.url == "https://example.com/"


def test_no_host_is_ignored_when_told_so(cassette_path: Path) -> None:
    with StubLLM() as llm:
        with record(cassette_path, ignore_hosts=()), httpx.Client() as client:
            _post_trace(client, llm.url)
        trace = llm.url + "/v1/traces/ingest"
    cassette = read_cassette(cassette_path)
    assert cassette.header.ignore_hosts == []
    assert [e.request.url for e in cassette.events if isinstance(e, HttpEvent)] == [trace]
