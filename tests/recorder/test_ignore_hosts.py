"""Hosts a cassette ignores: never recorded, counted, answered locally where the session answers."""

from __future__ import annotations

from pathlib import Path

import httpx
import pytest

from recorder import Hooks, HttpEvent, SandboxViolation, playback, read_cassette, record
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
    assert "api.smith.langchain.com/runs" in ignored
    assert not any(e.endswith("langchain.com") for e in ignored)  # prompt pulls are the agent's


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
    with record(path, hooks=Hooks(allowed_hosts=["127.0.0.1"])), httpx.Client() as client:
        assert client.post("https://api.smith.langchain.com/runs/batch", json={}).status_code == 200
        with pytest.raises(SandboxViolation):
            client.get("https://example.com/")
    cassette = read_cassette(path)
    assert cassette.footer is not None
    assert cassette.footer.usage.ignored == {"api.smith.langchain.com/runs": 1}
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


def test_a_frozen_llm_ignores_what_its_recording_ignored(tmp_path: Path) -> None:
    first, second = tmp_path / "first.cassette", tmp_path / "second.cassette"
    with StubLLM() as llm:
        url, base = llm.url, llm.openai_base_url
        with record(first, ignore_hosts=["127.0.0.1/telemetry"]), httpx.Client() as client:
            client.post(url + "/telemetry", json={"span": 1})
            chat = client.post(base + "/chat/completions", json={"model": "m"})
    # Replayed with a run that ignores nothing of its own: the recording's list still holds.
    source = playback(first)
    with record(second, ignore_hosts=(), hooks=Hooks(source=source)), httpx.Client() as client:
        assert client.post(url + "/telemetry", json={"span": 2}).status_code == 200
        again = client.post(base + "/chat/completions", json={"model": "m"})
    assert again.json() == chat.json() and source.misses == []
    cassette = read_cassette(second)
    assert cassette.footer is not None
    assert cassette.footer.usage.ignored == {"127.0.0.1/telemetry": 1}


@pytest.mark.parametrize(
    ("entry", "url", "ignored"),
    [
        ("localhost:4318/v1/traces", "http://localhost:4318/v1/traces", True),
        ("localhost:4318/v1/traces", "http://localhost:4317/v1/traces", False),
        ("localhost/v1/traces", "http://localhost:4317/v1/traces/x", True),
        ("https://Collector.example/v1/", "http://collector.example/v1/logs", True),
        ("collector.example/v1", "http://collector.example/v10", False),
    ],
)
def test_entries_match_host_port_and_path_prefix(
    entry: str, url: str, ignored: bool, cassette_path: Path
) -> None:
    with record(cassette_path, ignore_hosts=[entry], hooks=Hooks(allowed_hosts=["nowhere"])) as rec:
        assert (rec.ignored(url) is not False) is ignored


def test_langsmith_s_server_info_is_ignored_so_tracing_never_makes_a_miss(
    cassette_path: Path,
) -> None:
    """The LangSmith client asks ``GET /info`` before it traces (issue 30, point 4)."""
    langsmith = pytest.importorskip("langsmith", reason="the frameworks extra is not installed")
    with record(cassette_path):
        pass  # the agent's recording: nothing of LangSmith's in it
    with playback(cassette_path) as player:
        client = langsmith.Client(
            api_key="lsv2-test", api_url="https://api.smith.langchain.com", auto_batch_tracing=False
        )
        assert client.info is not None
    assert player.misses == []
    assert set(player.ignored_calls) == {"api.smith.langchain.com/info"}
