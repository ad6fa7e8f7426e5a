"""Decoding is streamed: a cassette bomb is refused at the step passing a cap, in bounded memory.

The bombs are ``bench._bombs``' (valid cassettes, checksums right, that inflate about 1000
times in deflate, far more in zstd), in both containers a reader takes. Memory is what
``tracemalloc`` sees the decoder allocate at its peak, never a clock.
"""

from __future__ import annotations

import tracemalloc
from collections.abc import Callable
from pathlib import Path

import pytest

from bench import _bombs
from recorder import CassetteCorrupt, _bounds, _codec, read_cassette
from recorder._streams import zstd
from tests.helpers import REPO, replay

MIB = 1 << 20
COMMITTED = sorted((REPO / "cassettes").rglob("*.cassette"))
CONTAINERS = pytest.mark.parametrize(
    "container",
    [_codec.CONTAINER_ZSTD_MSGPACK, _codec.CONTAINER_DEFLATE_MSGPACK],
    ids=["zstd", "deflate"],
)


def peak_mib(work: Callable[[], object]) -> float:
    """The most ``work`` had allocated at once, in MiB (it is expected to raise)."""
    tracemalloc.start()
    try:
        with pytest.raises(_codec.DecodeError):
            work()
        return tracemalloc.get_traced_memory()[1] / MIB
    finally:
        tracemalloc.stop()


@CONTAINERS
def test_a_bomb_is_one_error_line_naming_the_bound(tmp_path: Path, container: int) -> None:
    one = tmp_path / "one.cassette"
    one.write_bytes(_bombs.one_value(64 * MIB, container))  # 64 MiB of zeros, <= 64 KB
    code, out, err = replay("show", str(one))
    assert code == 2 and out == ""
    lines = err.strip().splitlines()
    if container == _codec.CONTAINER_DEFLATE_MSGPACK:  # ~1,000x: the record cap comes first
        bound = "record 1 is longer than 32 MiB, the most one record may take"
    else:  # zstd packs zeros ~30,000x: the file's own limit comes first
        size = one.stat().st_size
        bound = f"decompresses to more than {size * 1000:,} bytes, the limit for a {size:,}-byte"
        bound += " file (1000x its size, at most 128 MiB)"
    assert lines == [f"error: {one}: {bound}"]
    many = tmp_path / "many.cassette"
    many.write_bytes(_bombs.many_records(160, MIB, container))
    with pytest.raises(CassetteCorrupt, match=r"decompresses to more than .* at most 128 MiB\)"):
        read_cassette(many)


@CONTAINERS
def test_refusing_holds_no_more_than_the_caps(
    monkeypatch: pytest.MonkeyPatch, container: int
) -> None:
    # Small caps, so the bound is tight: the old decoder inflated up to the limit
    # whole, then copied it into msgpack's buffer, then built the records (3x it).
    monkeypatch.setattr(_bounds, "INFLATE_CAP", 8 * MIB)
    monkeypatch.setattr(_bounds, "RECORD_CAP", 2 * MIB)
    many = _bombs.many_records(64, MIB, container)  # 64 MiB in <= 70 KB: the cap is 8 MiB
    assert peak_mib(lambda: _codec.decode(many)) < 8 + 2 * 2 + 1.5
    one = _bombs.one_value(64 * MIB, container)
    assert peak_mib(lambda: _codec.decode(one)) < 2 * 2 + 1.5


@CONTAINERS
def test_at_the_real_caps_a_refused_bomb_stays_under_256_mb(container: int) -> None:
    many = _bombs.many_records(8, 31 * MIB, container)  # each just under the record cap
    assert peak_mib(lambda: _codec.decode(many)) < 128 + 2 * 32 + 2  # 194 MiB = 203 MB
    delta = _bombs.delta_bodies(300, 16 * MIB, container)  # restored from a 16 MiB one
    assert peak_mib(lambda: _codec.decode(delta)) < 128 + 2 * 16 + 2


def _rewritten(data: bytes, container: int) -> bytes:
    """The same records in ``container`` (the committed cassettes were written in deflate)."""
    records = _codec.decode(data).records
    encoder = _codec.Encoder(container)
    return encoder.preamble() + b"".join(map(encoder.encode, records)) + encoder.finish()


@pytest.mark.parametrize("path", COMMITTED, ids=lambda p: str(p.relative_to(REPO)))
@pytest.mark.parametrize("step", [1, 7, 4096])
@CONTAINERS
def test_any_step_reads_the_same_records_and_cut_tails(
    monkeypatch: pytest.MonkeyPatch, path: Path, step: int, container: int
) -> None:
    data = _rewritten(path.read_bytes(), container)
    cuts = range(len(_codec.MAGIC), len(data) + 1, max(1, len(data) // 40))
    whole = [_codec.decode(data[:cut]) for cut in cuts]
    monkeypatch.setattr(_codec, "STEP", step)
    for cut, expected in zip(cuts, whole, strict=True):
        got = _codec.decode(data[:cut])
        assert (got.records, got.tail_bytes) == (expected.records, expected.tail_bytes)
    assert _codec.decode_leading(data, 1, chunk=step) == whole[-1].records[:1]


def test_the_writer_stops_before_a_record_the_reader_would_refuse() -> None:
    encoder = _codec.Encoder()
    with pytest.raises(ValueError, match="the record is longer than 32 MiB"):
        encoder.encode({"kind": "warning", "t": 0.0, "message": "x" * (33 * MIB)})
    encoded = encoder.preamble() + encoder.encode({"kind": "warning", "t": 0.0, "message": "ok"})
    assert _codec.decode(encoded).records == [{"kind": "warning", "t": 0.0, "message": "ok"}]


def test_frames_one_after_another_are_read_through_empty_ones() -> None:
    # A resumed recording starts a new zstd frame; a hostile file can hold many. Each is
    # read from where the last ended (the file's rest was once copied at every frame's end).
    first, second = _codec.Encoder(), _codec.Encoder()
    a = {"kind": "warning", "t": 0.0, "message": "a"}
    b = {"kind": "warning", "t": 1.0, "message": "b"}
    empty = zstd.ZstdCompressor().compress(b"", zstd.ZstdCompressor.FLUSH_FRAME)
    data = first.preamble() + first.encode(a) + first.finish() + empty * 50_000
    data += second.encode(b) + second.finish()
    assert _codec.decode(data).records == [a, b]
    with pytest.raises(_codec.DecodeError, match="5 unexpected bytes after the end"):
        _codec.decode(data + b"junk!")
