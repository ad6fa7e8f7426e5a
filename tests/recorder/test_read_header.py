"""read_header: a cassette's header without decoding its events."""

from __future__ import annotations

from pathlib import Path

import pytest

from recorder import CassetteCorrupt, CassetteVersionUnsupported, read_cassette, read_header
from tests.helpers import REPO

GOLDEN = REPO / "cassettes" / "refund-4812.cassette"


def test_the_header_is_the_one_a_full_read_gives() -> None:
    assert read_header(GOLDEN) == read_cassette(GOLDEN).header


def test_it_reads_only_the_start_of_the_file(tmp_path: Path) -> None:
    data = GOLDEN.read_bytes()
    cut = tmp_path / "cut.cassette"
    cut.write_bytes(data[: len(data) // 2])  # the events after the header are cut
    assert read_header(cut) == read_cassette(GOLDEN).header


@pytest.mark.parametrize(
    ("content", "error"),
    [
        (b"not a cassette at all", CassetteCorrupt),
        (GOLDEN.read_bytes()[:12], CassetteCorrupt),  # cut inside the header
    ],
)
def test_damage_is_refused(tmp_path: Path, content: bytes, error: type) -> None:
    path = tmp_path / "bad.cassette"
    path.write_bytes(content)
    with pytest.raises(error):
        read_header(path)


def test_an_unknown_version_is_refused(tmp_path: Path) -> None:
    from recorder import Header, Pins
    from recorder._writer import CassetteWriter

    path = tmp_path / "v99.cassette"
    header = Header(version=99, pins=Pins(), started_at="x", recorder_version="x")
    CassetteWriter(path, header).close(None)
    with pytest.raises(CassetteVersionUnsupported):
        read_header(path)


def test_holds_events_reads_past_the_header_only_as_far_as_one_record(tmp_path: Path) -> None:
    from recorder import holds_events, record

    assert holds_events(GOLDEN)
    data = GOLDEN.read_bytes()
    cut = tmp_path / "cut.cassette"
    cut.write_bytes(data[:-64])  # the footer is cut; the events before it are there
    assert holds_events(cut)
    empty = tmp_path / "empty.cassette"
    with record(empty):
        pass  # a session that recorded nothing: header, then footer
    assert read_cassette(empty).events == []
    assert not holds_events(empty)
    for damaged in (b"not a cassette at all", data[:12]):
        (tmp_path / "bad.cassette").write_bytes(damaged)
        with pytest.raises(CassetteCorrupt):
            holds_events(tmp_path / "bad.cassette")
