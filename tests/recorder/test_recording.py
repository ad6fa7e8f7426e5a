"""The recording context manager: errors inside, pins, overwrite, threads."""

from __future__ import annotations

import threading
from pathlib import Path

import httpx
import pytest

from recorder import CassetteError, ErrorEvent, HttpEvent, Pins, read_cassette, record, tool


def echo(request: httpx.Request) -> httpx.Response:
    return httpx.Response(200, json={"ok": True})


def test_exception_inside_is_recorded_and_propagates(cassette_path: Path) -> None:
    @tool
    def step() -> int:
        return 1

    with pytest.raises(ZeroDivisionError), record(cassette_path, case_id="boom"):
        step()
        _ = 1 / 0
    cassette = read_cassette(cassette_path)
    assert cassette.complete and cassette.footer is not None
    assert cassette.footer.status == "error"
    (error,) = [e for e in cassette.events if isinstance(e, ErrorEvent)]
    assert error.error.type == "builtins.ZeroDivisionError"
    assert cassette.footer.usage.tool_calls == 1


def test_pins_given_and_observed(cassette_path: Path) -> None:
    with record(
        cassette_path,
        pins=Pins(grader_version="g1", budget={"steps": 10}, user={"prompt": "v7"}),
        agent_version="abc123",
    ) as rec:
        with httpx.Client(transport=httpx.MockTransport(echo)) as client:
            client.post(
                "http://llm.local/v1/chat/completions",
                json={"model": "m-1", "messages": [{"role": "system", "content": "S"}], "seed": 3},
            )
        rec.answer("done")
    header = read_cassette(cassette_path).header
    footer = read_cassette(cassette_path).footer
    assert footer is not None
    assert header.pins.agent_version == "abc123" and header.pins.model is None
    pins = footer.pins
    assert (pins.model, pins.sampling, pins.grader_version) == ("m-1", {"seed": 3}, "g1")
    assert pins.user == {"prompt": "v7"} and pins.budget == {"steps": 10.0}
    assert pins.system_prompt_hash is not None and footer.final_answer == "done"


def test_agent_version_defaults_to_the_git_commit(cassette_path: Path) -> None:
    with record(cassette_path):
        pass
    version = read_cassette(cassette_path).header.pins.agent_version
    assert version is None or len(version.split("-")[0]) == 12


def test_an_existing_cassette_is_not_overwritten_by_default(cassette_path: Path) -> None:
    with record(cassette_path, case_id="first"):
        pass
    with pytest.raises(
        CassetteError, match="already exists; choose another path or pass overwrite=True"
    ):
        record(cassette_path)
    assert read_cassette(cassette_path).header.case_id == "first"
    with record(cassette_path, case_id="second", overwrite=True):
        pass
    assert read_cassette(cassette_path).header.case_id == "second"


def test_threads_started_inside_are_recorded(cassette_path: Path) -> None:
    def worker(client: httpx.Client, n: int) -> None:
        client.get(f"http://svc.local/item/{n}")

    with record(cassette_path), httpx.Client(transport=httpx.MockTransport(echo)) as client:
        threads = [threading.Thread(target=worker, args=(client, n)) for n in range(4)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
    urls = sorted(
        e.request.url for e in read_cassette(cassette_path).events if isinstance(e, HttpEvent)
    )
    assert urls == [f"http://svc.local/item/{n}" for n in range(4)]


def test_nothing_is_recorded_after_the_block(cassette_path: Path) -> None:
    with httpx.Client(transport=httpx.MockTransport(echo)) as client:
        with record(cassette_path):
            client.get("http://svc.local/in")
        client.get("http://svc.local/out")
    events = read_cassette(cassette_path).events
    assert [e.request.url for e in events if isinstance(e, HttpEvent)] == ["http://svc.local/in"]
    assert httpx.MockTransport.handle_request.__name__ == "handle_request"
