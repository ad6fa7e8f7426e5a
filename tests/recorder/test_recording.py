"""The recording context manager: errors inside, pins, overwrite, threads."""

from __future__ import annotations

import asyncio
import dataclasses
import datetime as dt
import inspect
import threading
from pathlib import Path

import httpx
import pytest

from recorder import (
    CassetteError,
    ErrorEvent,
    Hooks,
    HttpEvent,
    Pins,
    Recording,
    ToolEvent,
    playback,
    read_cassette,
    record,
    tool,
)


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


def test_playback_raises_recorded_transport_errors(cassette_path: Path) -> None:
    def server(request: httpx.Request) -> httpx.Response:
        if request.url.path == "/down":
            raise httpx.ConnectError("connection refused", request=request)

        def body():  # type: ignore[no-untyped-def]
            yield b"part1"
            raise httpx.ReadError("connection reset", request=request)

        return httpx.Response(200, content=body())

    def agent(client: httpx.Client) -> list[str]:
        seen = []
        for path in ("/down", "/cut"):
            try:
                with client.stream("GET", f"http://svc.local{path}") as response:
                    for chunk in response.iter_raw():
                        seen.append(chunk.decode())
            except httpx.TransportError as exc:
                seen.append(type(exc).__name__)
        return seen

    with record(cassette_path), httpx.Client(transport=httpx.MockTransport(server)) as client:
        live = agent(client)
    with playback(cassette_path), httpx.Client() as client:
        replayed = agent(client)
    assert live == replayed == ["ConnectError", "part1", "ReadError"]
    cut = [e for e in read_cassette(cassette_path).events if isinstance(e, HttpEvent)][1]
    assert cut.response is not None and not cut.response.complete and cut.error is not None


def test_sessions_left_out_of_order_do_not_linger(tmp_path: Path) -> None:
    first = record(tmp_path / "a.cassette").__enter__()
    second = record(tmp_path / "b.cassette").__enter__()
    first.__exit__(None, None, None)
    second.__exit__(None, None, None)

    @tool
    def ping() -> str:
        return "pong"

    assert ping() == "pong"  # no session is current: a plain call, not "cassette closed"


def test_a_response_ending_after_the_block_is_dropped_quietly(cassette_path: Path) -> None:
    with httpx.Client(
        transport=httpx.MockTransport(lambda r: httpx.Response(200, content=iter([b"a", b"b"])))
    ) as client:
        with record(cassette_path):
            response = client.send(
                client.build_request("GET", "http://svc.local/slow"), stream=True
            )
        assert response.read() == b"ab"  # no "cassette already closed" in the agent's face
        response.close()
    cassette = read_cassette(cassette_path)
    assert cassette.complete
    (event,) = [e for e in cassette.events if isinstance(e, HttpEvent)]
    assert event.response is not None and not event.response.complete


def test_a_late_call_from_a_thread_left_running_is_refused_when_asked(tmp_path: Path) -> None:
    """``Hooks.refuse_late``: a call from a context the recording was current in, after it closed,
    raises instead of going out unrecorded or into the other active recording."""
    import contextvars

    from recorder import RecordingClosed

    @tool
    def ping() -> str:
        return "pong"

    def late_calls(client: httpx.Client) -> list[str]:
        outcomes = []
        for call in (ping, lambda: client.get("http://svc.local/late")):
            try:
                call()
                outcomes.append("went through")
            except RecordingClosed as exc:
                outcomes.append(str(exc))
        return outcomes

    for refuse in (True, False):
        mine, other = tmp_path / f"mine-{refuse}.cassette", tmp_path / f"other-{refuse}.cassette"
        with httpx.Client(transport=httpx.MockTransport(echo)) as client:
            with record(mine, hooks=Hooks(refuse_late=refuse)):
                left = contextvars.copy_context()  # what a thread started inside would hold
            with record(other):  # another trial's recording, active meanwhile
                outcomes = left.run(late_calls, client)
        if refuse:
            assert (
                outcomes
                == [
                    f"the recording into {mine} has closed: a call made after it (from a thread or "
                    "task its trial left running) is refused"
                ]
                * 2
            )
            assert read_cassette(mine).events == read_cassette(other).events == []
        else:  # (as before: the call lands in the only active recording's cassette)
            assert outcomes == ["went through"] * 2
            assert len(read_cassette(other).events) == 2


def test_a_checked_result_that_is_refused_is_the_call_s_recorded_error(
    cassette_path: Path,
) -> None:
    """``Hooks.check_result``: what it raises is the call's outcome, recorded with its error."""
    seen: list[tuple[str, object]] = []

    def check(name: str, result: object) -> None:
        seen.append((name, result))
        if len(str(result)) > 15:
            raise ValueError(f"{name}: too long")

    @tool
    def say(text: str) -> dict[str, str]:
        return {"said": text}

    @tool
    async def say_async(text: str) -> str:
        return text

    with record(cassette_path, hooks=Hooks(check_result=check)):
        assert say("hi") == {"said": "hi"}
        with pytest.raises(ValueError, match="say: too long"):
            say("a long sentence")
        with pytest.raises(ValueError, match="say_async: too long"):
            asyncio.run(say_async("another long one"))
    assert seen[0] == ("say", {"said": "hi"})  # given as JSON-ready data
    events = [e for e in read_cassette(cassette_path).events if isinstance(e, ToolEvent)]
    assert [(e.result, e.error.message if e.error else None) for e in events] == [
        ({"said": "hi"}, None),
        (None, "say: too long"),
        (None, "say_async: too long"),
    ]


def test_record_takes_a_person_s_keywords_and_a_harness_s_hooks_in_one_object() -> None:
    """Where the line runs between them, and why, is ``Hooks``' docstring."""
    assert list(inspect.signature(Recording).parameters) == [
        *("path", "case_id", "trial", "pins", "world", "fixture_source", "redaction"),
        *("secrets", "agent_version", "overwrite", "ignore_hosts", "strict", "hooks"),
    ]
    assert [field.name for field in dataclasses.fields(Hooks)] == [
        *("source", "allowed_hosts", "interpose", "check_result", "refuse_late"),
        *("clock", "wall_clock"),
    ]
    assert Hooks(allowed_hosts=iter(["b.internal", "a.internal"])).allowed_hosts == (
        "a.internal",
        "b.internal",
    )


def test_the_clocks_are_hooks(cassette_path: Path) -> None:
    ticks = iter(range(100))
    started = dt.datetime(2024, 7, 1, 12, 0, tzinfo=dt.timezone.utc)
    hooks = Hooks(clock=lambda: float(next(ticks)), wall_clock=lambda: started)
    with record(cassette_path, hooks=hooks) as rec:
        rec.warn("one")
    cassette = read_cassette(cassette_path)
    assert cassette.header.started_at == started.isoformat()
    assert [event.t for event in cassette.events] == [1.0]  # the clock read once at the start


@pytest.mark.parametrize(
    "raw",
    [
        [(b"X-Trace", b"abc"), (b"Accept", b"*/*")],
        [("X-Grüße".encode(), "héllo".encode()), (b"Accept", b"*/*")],  # UTF-8
        [(b"X-Raw", b"\xff\xfe caf\xe9"), (b"X-Raw", b"twice")],  # neither: ISO-8859-1
    ],
)
def test_httpx_headers_are_recorded_as_httpx_decodes_them(
    cassette_path: Path, raw: list[tuple[bytes, bytes]]
) -> None:
    def answer(request: httpx.Request) -> httpx.Response:
        return httpx.Response(200, headers=raw, content=b"{}")

    with record(cassette_path), httpx.Client(transport=httpx.MockTransport(answer)) as client:
        client.send(httpx.Request("GET", "http://api.test/x", headers=raw))  # (as given)
    (event,) = [e for e in read_cassette(cassette_path).events if isinstance(e, HttpEvent)]
    ours = [(k, v) for k, v in httpx.Headers(raw).multi_items() if k.startswith("x-")]
    assert event.response is not None and ours
    for recorded in (event.request.headers, event.response.headers):
        assert [(k, v) for k, v in recorded if k.startswith("x-")] == ours
