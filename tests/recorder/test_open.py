"""Opening a cassette: which problem a read reports, request bodies restored, the collector."""

from __future__ import annotations

import gc
import zlib
from pathlib import Path
from typing import Any

import msgpack
import pytest

from recorder import CassetteCorrupt, CassetteVersionUnsupported, HttpEvent, read_cassette
from recorder._codec import CONTAINER_DEFLATE_MSGPACK, CONTAINER_ZSTD_MSGPACK, Encoder
from tests.helpers import REPO

HEADER: dict[str, Any] = {
    "kind": "header",
    "version": 5,
    "started_at": "2026-01-01T00:00:00+00:00",
    "recorder_version": "test",
}
WARNING: dict[str, Any] = {"kind": "warning", "t": 0.0, "message": "w"}
INVALID: dict[str, Any] = {"kind": "tool", "t": "soon"}
FOOTER: dict[str, Any] = {"kind": "footer", "status": "ok"}
CONTAINERS = pytest.mark.parametrize(
    "container", [CONTAINER_ZSTD_MSGPACK, CONTAINER_DEFLATE_MSGPACK], ids=["zstd", "deflate"]
)


def http(body: Any, *, headers: list[list[str]] | None = None) -> dict[str, Any]:
    """A raw HTTP record whose request body is stored as given (bytes or a delta)."""
    return {
        "kind": "http",
        "t": 0.0,
        "duration": 0.0,
        "via": "httpx",
        "request": {"method": "POST", "url": "http://x/", "headers": [], "body": body},
        "response": {"status": 200, "headers": headers or [], "chunks": [b"{}"]},
    }


def cassette(
    path: Path, records: list[dict[str, Any] | bytes], container: int = CONTAINER_ZSTD_MSGPACK
) -> Path:
    """Write ``records`` as they are; bytes stand for a record that fails its checksum."""
    encoder = Encoder(container)
    out = encoder.preamble()
    for record in records:
        if isinstance(record, bytes):
            framed = msgpack.packb(zlib.crc32(record) ^ 1) + record
            out += encoder._stream.record(framed)
        else:
            out += encoder.encode(record)
    path.write_bytes(out)
    return path


def bad_crc(record: dict[str, Any]) -> bytes:
    return msgpack.packb(record, use_bin_type=True)


@CONTAINERS
@pytest.mark.parametrize(
    ("records", "message"),
    [
        # Records are validated as they are decoded, yet damage anywhere is what is reported.
        ([HEADER, INVALID, WARNING, bad_crc(WARNING)], "record 3 fails its checksum"),
        ([HEADER, INVALID, FOOTER, WARNING], "record 1 is invalid: tool.t:"),
        ([HEADER, WARNING, HEADER, INVALID], "record 2 is a second header"),
        ([HEADER, FOOTER, INVALID], "record 2 is invalid"),
        ([HEADER, FOOTER, WARNING, bad_crc(WARNING)], "record 3 fails its checksum"),
        ([HEADER, FOOTER, WARNING, INVALID], "record 2 follows the footer"),
        ([WARNING, bad_crc(WARNING)], "record 1 fails its checksum"),
        ([WARNING, HEADER], "does not start with a header record"),
        ([{**HEADER, "case_id": 3}, WARNING], "record 0 is invalid: case_id:"),
    ],
)
def test_the_first_problem_is_reported_damage_before_content(
    tmp_path: Path, container: int, records: list[dict[str, Any] | bytes], message: str
) -> None:
    path = cassette(tmp_path / "x.cassette", records, container)
    with pytest.raises(CassetteCorrupt) as info:
        read_cassette(path)
    text = str(info.value)
    assert text.startswith(f"{path}: ") and message in text and "\n" not in text


def test_an_unknown_version_is_reported_before_what_follows_it_but_not_before_damage(
    tmp_path: Path,
) -> None:
    future = {**HEADER, "version": 99}
    with pytest.raises(CassetteVersionUnsupported):
        read_cassette(cassette(tmp_path / "a.cassette", [future, INVALID, FOOTER]))
    damaged = cassette(tmp_path / "b.cassette", [future, bad_crc(WARNING)])
    with pytest.raises(CassetteCorrupt, match="record 1 fails its checksum"):
        read_cassette(damaged)


BODY = bytes(range(256)) * 4  # 1 KiB: the body the deltas below refer to


@pytest.mark.parametrize(
    "delta",
    [
        [1, b"x"],
        [1, b"x", 2, 3],
        [-1, b"x", 0],
        [0, b"x", -1],
        [True, b"x", 0],
        [0, b"x", 1.0],
        [0, "x", 0],
        [0, None, 0],
        [len(BODY), b"x", 1],
        [2**64 - 1, b"", 0],
    ],
)
def test_a_malformed_body_delta_is_refused(tmp_path: Path, delta: list[Any]) -> None:
    path = cassette(tmp_path / "x.cassette", [HEADER, http(BODY), http(delta), FOOTER])
    with pytest.raises(CassetteCorrupt, match="record 2 has a malformed request body delta"):
        read_cassette(path)


def test_body_deltas_restore_against_the_last_http_body(tmp_path: Path) -> None:
    records: list[dict[str, Any] | bytes] = [
        HEADER,
        http(BODY),
        WARNING,  # not HTTP: the reference stays
        http([10, b"<new>", 20]),
        http([12, b"!", 20]),  # against the body restored last, not the first
        http([0, b"", 0]),
        FOOTER,
    ]
    events = read_cassette(cassette(tmp_path / "x.cassette", records)).events
    bodies = [e.request.body for e in events if isinstance(e, HttpEvent)]
    second = BODY[:10] + b"<new>" + BODY[-20:]
    assert bodies == [BODY, second, second[:12] + b"!" + second[-20:], b""]


def test_a_gzip_bomb_response_is_refused_wherever_its_record_lies(tmp_path: Path) -> None:
    bomb = zlib.compressobj(9, zlib.DEFLATED, 31)
    chunk = bomb.compress(b"\0" * (8 << 20)) + bomb.flush()
    headers = [["content-type", "text/plain"], ["content-encoding", "gzip"]]
    record = http(b"", headers=headers)
    record["response"]["chunks"] = [chunk]
    # Raw, as a hostile file holds it (the writer refuses to write one).
    stream = Encoder()._stream
    raw = msgpack.packb(record, use_bin_type=True)
    head = msgpack.packb(HEADER, use_bin_type=True)
    framed = [msgpack.packb(zlib.crc32(r)) + r for r in (head, raw)]
    path = tmp_path / "bomb.cassette"
    path.write_bytes(Encoder().preamble() + b"".join(stream.record(f) for f in framed))
    with pytest.raises(CassetteCorrupt, match="record 1 has a gzip response body that inflates"):
        read_cassette(path)


def test_reading_leaves_the_collector_nothing_of_it_to_go_over() -> None:
    golden = sorted((REPO / "cassettes").rglob("*.cassette"))
    assert gc.isenabled()
    for path in golden:
        events = read_cassette(path).events
        assert gc.isenabled()
        # Collected as read: the header pairs untracked, the rest in the oldest generation;
        # what the last few records built is all the youngest holds.
        assert gc.get_count()[0] < gc.get_threshold()[0]
        http_events = [e for e in events if isinstance(e, HttpEvent)]
        pairs = [h for e in http_events for h in e.request.headers]
        if len(http_events) > 8:
            assert not any(gc.is_tracked(h) for h in pairs[: len(pairs) // 2])


def test_a_paused_collector_stays_paused_and_unrun() -> None:
    path = REPO / "cassettes" / "refund-4812.cassette"
    gc.disable()
    try:
        before = [s["collections"] for s in gc.get_stats()]
        read_cassette(path)
        assert not gc.isenabled()
        assert [s["collections"] for s in gc.get_stats()] == before
    finally:
        gc.enable()
