"""The cassette container: round trips, cut tails, damage, versions."""

from __future__ import annotations

import json
from hashlib import sha256
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from recorder import (
    CassetteCorrupt,
    CassetteError,
    CassetteNotFound,
    CassetteVersionUnsupported,
    ErrorInfo,
    Footer,
    Header,
    HttpEvent,
    HttpRequest,
    HttpResponse,
    ToolEvent,
    WarningEvent,
    read_cassette,
)
from recorder._codec import PREAMBLE, Encoder, decode
from recorder._writer import CassetteWriter
from tests.helpers import decompressed

json_values = st.recursive(
    st.none()
    | st.booleans()
    | st.integers(-(2**63), 2**63 - 1)
    | st.floats(allow_nan=False, allow_infinity=False)  # JSON values: the reader refuses inf
    | st.text(max_size=20),
    lambda inner: (
        st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=8), inner, max_size=4)
    ),
    max_leaves=12,
)

events = st.one_of(
    st.builds(
        ToolEvent,
        t=st.floats(0, 100),
        duration=st.floats(0, 10),
        name=st.text(min_size=1, max_size=12),
        args=st.dictionaries(st.text(max_size=8), json_values, max_size=4),
        effect=st.sampled_from(["read", "write"]),
        result=json_values,
    ),
    st.builds(
        HttpEvent,
        t=st.floats(0, 100),
        duration=st.floats(0, 10),
        via=st.just("httpx"),
        request=st.builds(
            HttpRequest,
            method=st.sampled_from(["GET", "POST"]),
            url=st.just("http://127.0.0.1/v1/chat/completions"),
            headers=st.lists(st.tuples(st.text(max_size=8), st.text(max_size=8)), max_size=3),
            body=st.binary(max_size=200),
        ),
        response=st.builds(
            HttpResponse,
            status=st.integers(100, 599),
            headers=st.just([]),
            chunks=st.lists(st.binary(max_size=50), max_size=5),
        ),
    ),
    st.builds(WarningEvent, t=st.floats(0, 100), message=st.text(max_size=40)),
)

HEADER = Header(started_at="2026-01-01T00:00:00+00:00", recorder_version="test", case_id="c1")


OK = Footer(status="ok")


def write(path: Path, evs: list, footer: Footer | None = OK) -> None:  # type: ignore[type-arg]
    writer = CassetteWriter(path, HEADER, overwrite=True)
    for event in evs:
        writer.write(event)
    writer.close(footer)


@settings(max_examples=40, deadline=None)
@given(st.lists(events, max_size=8))
def test_every_record_round_trips(tmp_path_factory: pytest.TempPathFactory, evs: list) -> None:  # type: ignore[type-arg]
    path = tmp_path_factory.mktemp("c") / "x.cassette"
    write(path, evs)
    back = read_cassette(path)
    assert back.header == HEADER
    assert back.events == evs
    assert back.footer == Footer(status="ok")
    assert back.complete and back.truncation is None


@settings(max_examples=30, deadline=None)
@given(st.lists(events, min_size=1, max_size=6), st.data())
def test_every_prefix_reads_as_its_complete_records(
    tmp_path_factory: pytest.TempPathFactory,
    evs: list,
    data: st.DataObject,  # type: ignore[type-arg]
) -> None:
    directory = tmp_path_factory.mktemp("c")
    path = directory / "x.cassette"
    write(path, evs, footer=None)
    full = path.read_bytes()
    # The size after the header and after each event: where a kill leaves complete records.
    encoder = Encoder()
    ends = [len(encoder.preamble() + encoder.encode(HEADER.model_dump(exclude_none=True)))]
    for event in evs:
        ends.append(ends[-1] + len(encoder.encode(event.model_dump(exclude_none=True))))
    cut = data.draw(st.integers(ends[0], len(full)))
    cut_path = directory / "cut.cassette"
    cut_path.write_bytes(full[:cut])
    back = read_cassette(cut_path)
    complete = sum(1 for end in ends[1:] if end <= cut)
    kept = len(back.events)
    # A record is whole once its bytes are; only the sync-flush marker after it may be cut.
    assert complete <= kept <= complete + 1
    assert back.events == evs[:kept]
    assert back.footer is None
    assert back.truncation is not None and f"{kept} complete events" in back.truncation


def test_records_are_decodable_as_soon_as_written(tmp_path: Path) -> None:
    path = tmp_path / "live.cassette"
    writer = CassetteWriter(path, HEADER)
    writer.write(WarningEvent(t=1.0, message="first"))
    # Nothing closed yet: the file already holds both records, complete.
    assert [r["kind"] for r in decode(path.read_bytes()).records] == ["header", "warning"]
    writer.close(Footer(status="ok"))


@pytest.mark.parametrize(
    ("content", "message"),
    [
        (b"", "not a cassette"),
        (b"version: 1\ninteractions: []\n", "not a cassette"),
        (PREAMBLE[:-1] + b"\x07", "unknown container type 7"),
        (PREAMBLE + b"\xff\xff\xff garbage", "damaged compressed data"),
        (PREAMBLE, "holds no complete header"),
    ],
)
def test_non_cassettes_are_refused_in_one_line(
    tmp_path: Path, content: bytes, message: str
) -> None:
    path = tmp_path / "bad.cassette"
    path.write_bytes(content)
    with pytest.raises(CassetteCorrupt) as info:
        read_cassette(path)
    text = str(info.value)
    assert text.startswith(f"{path}: ") and message in text and "\n" not in text


def test_unknown_format_version_is_refused(tmp_path: Path) -> None:
    path = tmp_path / "future.cassette"
    encoder = Encoder()
    raw = dict(HEADER.model_dump(exclude_none=True), version=99)
    path.write_bytes(encoder.preamble() + encoder.encode(raw))
    with pytest.raises(CassetteVersionUnsupported) as info:
        read_cassette(path)
    assert info.value.version == 99
    assert str(info.value).startswith(f"{path}: cassette format version 99 is not supported")


def test_a_record_that_is_not_valid_names_its_index(tmp_path: Path) -> None:
    path = tmp_path / "odd.cassette"
    encoder = Encoder()
    body = encoder.encode(HEADER.model_dump(exclude_none=True)) + encoder.encode(
        {"kind": "tool", "t": "soon"}
    )
    path.write_bytes(encoder.preamble() + body)
    with pytest.raises(CassetteCorrupt, match=r"record 1 is invalid"):
        read_cassette(path)


def test_missing_cassette_is_a_file_not_found(tmp_path: Path) -> None:
    with pytest.raises(CassetteNotFound) as info:
        read_cassette(tmp_path / "nope.cassette")
    assert isinstance(info.value, FileNotFoundError)


def test_error_info_survives(tmp_path: Path) -> None:
    event = ToolEvent(
        t=0, duration=0, name="x", args={}, effect="write", error=ErrorInfo(type="E", message="m")
    )
    path = tmp_path / "e.cassette"
    write(path, [event])
    assert read_cassette(path).events == [event]


def test_damage_is_refused_never_misread(tmp_path: Path) -> None:
    import random

    from examples.shop import record_refund

    source = tmp_path / "refund.cassette"
    record_refund(source)
    good = read_cassette(source)
    data = source.read_bytes()
    rng = random.Random(7)
    damaged = tmp_path / "damaged.cassette"
    for _ in range(400):
        flipped = bytearray(data)
        position = rng.randrange(len(PREAMBLE), len(flipped))
        flipped[position] ^= 1 << rng.randrange(8)
        damaged.write_bytes(bytes(flipped))
        try:
            back = read_cassette(damaged)
        except CassetteError:
            continue  # refused in one line: fine
        # Read back: then only as a prefix of what was written, never altered content.
        assert back.header == good.header
        assert back.events == good.events[: len(back.events)]
        assert back.footer in (None, good.footer)


def test_a_long_record_cut_short_is_a_truncation(tmp_path: Path) -> None:
    # distinct chunks: the record stays long once compressed, so every cut is inside it
    chunks = [f"data: {sha256(str(i).encode()).hexdigest()}\n\n".encode() for i in range(3000)]
    event = HttpEvent(
        t=0,
        duration=0,
        via="httpx",
        request=HttpRequest(method="POST", url="http://x/v1/chat/completions", headers=[]),
        response=HttpResponse(status=200, headers=[], chunks=chunks),
    )
    path = tmp_path / "long.cassette"
    write(path, [event], footer=None)
    data = path.read_bytes()
    for cut in range(len(data) - 200, len(data) - 10, 17):
        path.write_bytes(data[:cut])
        back = read_cassette(path)
        assert back.events == [] and back.truncation is not None


def test_growing_conversations_are_stored_once_and_read_back_whole(tmp_path: Path) -> None:
    messages: list[dict[str, str]] = []
    events = []
    for turn in range(80):
        messages.append({"role": "user", "content": f"turn {turn}: " + "lorem ipsum " * 40})
        body = json.dumps({"messages": messages, "model": "m", "tools": []}).encode()
        events.append(
            HttpEvent(
                t=turn,
                duration=0,
                via="httpx",
                request=HttpRequest(
                    method="POST", url="http://x/v1/chat/completions", headers=[], body=body
                ),
                response=HttpResponse(status=200, headers=[], chunks=[b"{}"]),
            )
        )
    path = tmp_path / "conversation.cassette"
    write(path, events)
    assert read_cassette(path).events == events
    total = sum(len(e.request.body) for e in events)
    # Each request resends the conversation: ~1.7 MB of bodies, stored as their new parts.
    assert total > 1_000_000 and len(decompressed(path)) < total / 20
