"""A recording that cannot start or go on never breaks the agent; ``strict=True`` raises.

The demo session (the shop agent refunding order 4812 against the scripted
stub model) is recorded onto a 256 KB tmpfs that a filler fills mid-session
(when the stub answers the agent's third LLM call).
"""

from __future__ import annotations

import base64
import contextlib
import html
import json
import os
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

import recorder._writer
from examples.shop import INSTRUCTION, make_tools, open_world, refund_policy, run_agent
from recorder import Recording, RecordingFailed, read_cassette, record, tool
from recorder._codec import (
    CONTAINER_DEFLATE_MSGPACK,
    CONTAINER_ZSTD_MSGPACK,
    Encoder,
    decode,
)
from replay import Store, cassette_html
from replay.stub_llm import ChatRequest, Reply, StubLLM
from tests.helpers import REPO, replay

Hook = Callable[[], None]


@pytest.fixture
def small_disk(tmp_path: Path) -> Iterator[Path]:
    """A 256 KB tmpfs, unmounted after the test."""
    mount = tmp_path / "disk"
    mount.mkdir()
    done = subprocess.run(
        ["mount", "-t", "tmpfs", "-o", "size=256k", "tmpfs", str(mount)],
        capture_output=True,
        text=True,
    )
    if done.returncode != 0:
        pytest.skip(
            "cannot mount a small tmpfs to fill (needs root and mount permission): "
            + (done.stderr.strip() or f"mount exited {done.returncode}")
        )
    try:
        yield mount
    finally:
        subprocess.run(["umount", "-l", str(mount)], check=False)


def filler(mount: Path) -> Hook:
    """Fill the file system at ``mount`` to its last byte."""

    def fill() -> None:
        fd = os.open(mount / "filler", os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o644)
        try:
            for size in (65536, 4096, 1):
                with contextlib.suppress(OSError):  # ENOSPC: full at this size
                    while True:
                        os.write(fd, b"\0" * size)
        finally:
            os.close(fd)

    return fill


def session(
    out: Path | None, *, at_call: int = 3, hook: Hook | None = None, **options: Any
) -> tuple[str, Recording | None]:
    """Run the demo session (recorded into ``out`` unless None); ``hook`` runs mid-session."""
    policy, calls = refund_policy(), []

    def model(request: ChatRequest) -> Reply:
        calls.append(request)
        if len(calls) == at_call and hook is not None:
            hook()
        return policy(request)

    with tempfile.TemporaryDirectory() as tmp, StubLLM(model) as llm:
        conn = open_world(Path(tmp))
        try:
            if out is None:
                return run_agent(INSTRUCTION, make_tools(conn), base_url=llm.openai_base_url), None
            with record(out, world=conn, case_id="refund-4812", **options) as rec:
                answer = run_agent(INSTRUCTION, make_tools(conn), base_url=llm.openai_base_url)
                rec.answer(answer)
        finally:
            conn.close()
    return answer, rec


def warnings_of(caplog: pytest.LogCaptureFixture) -> list[str]:
    return [r.getMessage() for r in caplog.records if r.name == "recorder"]


@pytest.fixture
def unrecorded() -> str:
    return session(None)[0]


def test_a_disk_filling_mid_session_stops_the_recording_not_the_agent(
    small_disk: Path, tmp_path: Path, unrecorded: str, caplog: pytest.LogCaptureFixture
) -> None:
    full = read_cassette(session(tmp_path / "full.cassette")[1].path)  # type: ignore[union-attr]
    caplog.clear()
    out = small_disk / "refund.cassette"
    answer, rec = session(out, hook=filler(small_disk))
    assert answer == unrecorded
    cassette = read_cassette(out)
    assert cassette.complete and cassette.footer is not None
    stopped = cassette.footer.stopped
    assert stopped is not None and rec is not None and rec.stopped == stopped
    assert "No space left on device" in stopped.error.message
    assert 0 < stopped.events == len(cassette.events) < len(full.events)
    assert [e.kind for e in cassette.events] == [e.kind for e in full.events][: stopped.events]
    assert cassette.footer.final_answer == unrecorded
    assert cassette.footer.status == "error"
    (warning,) = warnings_of(caplog)
    assert str(out) in warning and "No space left on device" in warning
    code, _, err = replay("show", str(out))
    assert code == 0 and f"warning: {out}: recording stopped at " in err
    assert "No space left on device" in err
    code, printed, _ = replay("show", str(out), "--json")
    assert code == 0 and json.loads(printed)["footer"]["stopped"]["events"] == stopped.events
    assert html.escape(stopped.describe()) in cassette_html(cassette)


def test_strict_raises_when_the_disk_fills(
    small_disk: Path, caplog: pytest.LogCaptureFixture
) -> None:
    out = small_disk / "refund.cassette"
    with pytest.raises(RecordingFailed) as raised:
        session(out, hook=filler(small_disk), strict=True)
    message = str(raised.value)
    assert "\n" not in message and message.startswith(f"{out}: recording stopped at ")
    assert "No space left on device" in message
    footer = read_cassette(out).footer  # the cassette ends with the note all the same
    assert footer is not None and footer.stopped is not None
    assert warnings_of(caplog) == []  # raised instead


def test_a_note_that_cannot_be_written_leaves_a_cassette_cut_short(
    small_disk: Path,
    unrecorded: str,
    caplog: pytest.LogCaptureFixture,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """No room kept past the end (a file system without fallocate) and a footer too big for
    what is left: the cassette holds every complete record and reads as cut short."""
    monkeypatch.setattr(recorder._writer, "_FALLOCATE", None)
    out = small_disk / "refund.cassette"
    big = base64.b64encode(os.urandom(12_000)).decode()  # incompressible: no footer fits
    with tempfile.TemporaryDirectory() as tmp, StubLLM(refund_policy()) as llm:
        conn = open_world(Path(tmp))
        with record(out, world=conn, case_id="refund-4812") as rec:
            filler(small_disk)()
            answer = run_agent(INSTRUCTION, make_tools(conn), base_url=llm.openai_base_url)
            rec.answer(big)
        conn.close()
    assert answer == unrecorded
    cassette = read_cassette(out)
    assert cassette.footer is None and cassette.truncation is not None
    assert rec.stopped is not None and len(cassette.events) == rec.stopped.events
    (warning,) = warnings_of(caplog)
    assert "No space left on device" in warning


def test_a_folder_removed_mid_session_costs_the_cassette_not_the_run(
    tmp_path: Path, unrecorded: str, caplog: pytest.LogCaptureFixture
) -> None:
    folder = tmp_path / "cassettes"
    answer, rec = session(folder / "refund.cassette", hook=lambda: shutil.rmtree(folder))
    assert answer == unrecorded
    assert rec is not None and rec.cassette is None and rec.stopped is not None
    assert rec.stopped.error.type == "FileNotFoundError"
    (warning,) = warnings_of(caplog)
    assert "removed while it was recorded" in warning
    with pytest.raises(RecordingFailed, match="removed while it was recorded"):
        session(folder / "again.cassette", hook=lambda: shutil.rmtree(folder), strict=True)


def test_a_recording_that_cannot_start_lets_the_agent_run(
    tmp_path: Path, unrecorded: str, caplog: pytest.LogCaptureFixture
) -> None:
    (tmp_path / "not-a-folder").write_text("")
    out = tmp_path / "not-a-folder" / "refund.cassette"
    answer, rec = session(out)
    assert answer == unrecorded and rec is not None and rec.cassette is None
    (warning,) = warnings_of(caplog)
    assert "recording could not start" in warning
    with pytest.raises(RecordingFailed, match="recording could not start") as raised:
        session(out, strict=True)
    assert "\n" not in str(raised.value)


@tool
def order_key(order_id: int) -> int:
    """A key msgpack cannot hold (wider than 64 bits).

    Args:
        order_id: The order.
    """
    return order_id << 70


@tool
def echo(text: str) -> str:
    """Say it back.

    Args:
        text: What to say.
    """
    return text


def test_a_record_that_cannot_be_encoded_stops_the_recording(
    cassette_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    with record(cassette_path) as rec:
        said = [echo("before"), order_key(4812), echo("after")]
    assert said == ["before", 4812 << 70, "after"]  # the agent got every result
    cassette = read_cassette(cassette_path)
    assert [e.result for e in cassette.events] == ["before"]  # type: ignore[union-attr]
    assert cassette.footer is not None and cassette.footer.stopped == rec.stopped
    assert rec.stopped is not None and rec.stopped.lost == "tool order_key"
    assert cassette.footer.status == "error"  # never ok: the cassette is not the whole run
    (warning,) = warnings_of(caplog)
    assert "could not write tool order_key (ValueError: the record holds an integer" in warning
    with pytest.raises(RecordingFailed, match="could not write tool order_key"):
        with record(cassette_path, overwrite=True, strict=True):
            with contextlib.suppress(RecordingFailed):  # an agent that swallows it:
                order_key(1)  # the block's end raises it again
            echo("after")


def test_the_one_warning_is_in_the_run_output_without_logging_set_up(tmp_path: Path) -> None:
    script = (
        "from recorder import record, tool\n"
        "@tool\n"
        "def key() -> int:\n"
        "    return 1 << 70\n"
        f"with record({str(tmp_path / 'k.cassette')!r}):\n"
        "    key(); key()\n"
        "print('agent done')\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, cwd=Path.cwd()
    )
    assert done.returncode == 0 and done.stdout == "agent done\n"
    (line,) = done.stderr.splitlines()
    assert "recording stopped at" in line and "could not write tool key" in line


@pytest.mark.parametrize("container", [CONTAINER_ZSTD_MSGPACK, CONTAINER_DEFLATE_MSGPACK])
def test_a_stream_goes_on_after_a_record_that_never_reached_the_file(container: int) -> None:
    """What the writer relies on when it takes a record back: a resumed encoder's bytes,
    appended after the last complete record, decode; so does a request body after a record
    msgpack refused (its body is no base for the next one's delta)."""

    def http(body: bytes, **more: Any) -> dict[str, Any]:
        return {"kind": "http", "request": {"method": "POST", "url": "u", "body": body}, **more}

    encoder = Encoder(container)
    data = encoder.preamble() + encoder.encode({"kind": "a"}) + encoder.encode(http(b"a" * 2000))
    encoder.encode({"kind": "lost"})  # its bytes never reached the file
    encoder = encoder.resume()
    data += encoder.encode(http(b"a" * 2000))
    with pytest.raises(OverflowError):
        encoder.encode(http(b"b" * 2000, n=1 << 70))
    data += encoder.encode(http(b"b" * 2000)) + encoder.finish()
    records = decode(data).records
    assert [r["kind"] for r in records] == ["a", "http", "http", "http"]
    assert [r["request"]["body"][:1] for r in records[1:]] == [b"a", b"a", b"b"]


def test_a_full_disk_at_the_start_leaves_no_file_and_the_agent_runs(
    small_disk: Path, unrecorded: str, caplog: pytest.LogCaptureFixture
) -> None:
    filler(small_disk)()
    out = small_disk / "refund.cassette"
    answer, rec = session(out)
    assert answer == unrecorded and rec is not None and rec.cassette is None
    assert not out.exists()  # no empty file to refuse the next recording as "already exists"
    (warning,) = warnings_of(caplog)
    assert "recording could not start" in warning and "No space left on device" in warning


def test_a_trial_whose_recording_fails_is_an_error_of_the_harness(tmp_path: Path) -> None:
    """replay's own recordings are strict: never a short cassette graded as if whole."""
    (tmp_path / "cassettes" / "r" / "refund-4812-0.cassette").mkdir(parents=True)  # in its way
    store = str(tmp_path / "r.db")
    case = REPO / "examples" / "shop" / "cases" / "refund-4812.yaml"
    with StubLLM(refund_policy()) as llm:
        code, _, err = replay(
            "run", str(case), "--run", "r", "--store", store, "--llm-url", llm.openai_base_url,
            "--agent", "examples.shop:agent", "--tools", "examples.shop:make_tools",
        )  # fmt: skip
    assert code == 3, err  # the harness's error: incomplete, not failed
    (trial,) = Store(store).trials("r")
    assert trial.verdict == "error" and trial.cause == "harness"
    (detail,) = trial.cause_detail
    assert detail.startswith("RecordingFailed: ") and "recording could not start" in detail


def huge_tools(conn: Any) -> list[Any]:
    """A tool whose result no cassette can hold (an integer past 64 bits)."""

    def order_total() -> int:
        """The order's total, in a unit too small."""
        return 4812 << 70

    return [tool(order_total)]


def asks_the_total(instruction: str, env: Any) -> str:
    """Calls the one tool; the trial's recording cannot write its result."""
    return str(env.call_tool("order_total", {}))


def test_a_trial_whose_tool_returns_what_no_cassette_holds_is_the_agent_s_error(
    tmp_path: Path,
) -> None:
    """Not the harness's (a full disk is): the value came from the agent's side."""
    store = str(tmp_path / "r.db")
    code, _, err = replay(
        "run", str(REPO / "examples" / "shop" / "cases" / "refund-4812.yaml"), "--run", "big",
        "--store", store, "--llm-url", "http://127.0.0.1:9/v1", "--no-llm-check",
        "--agent", "tests.recorder.test_recording_failures:asks_the_total",
        "--tools", "tests.recorder.test_recording_failures:huge_tools", "--isolation", "none",
    )  # fmt: skip
    assert code == 1, err  # the agent's error: failed, not incomplete
    (trial,) = Store(store).trials("big")
    assert (trial.verdict, trial.cause) == ("error", "agent")
    assert "could not write tool order_total" in trial.cause_detail[0]
