"""Cassette bytes: a magic prefix, then msgpack records in one raw-deflate stream.

Layout: ``MAGIC`` (8 bytes), one container byte, then a raw deflate stream
holding, for each record, its CRC-32 (a msgpack integer) followed by the
record (a msgpack map); the CRC catches damage deflate itself would not
(raw deflate has no checksum, and a flipped bit can decode into a different
but well-formed value). After every record the
compressor is flushed with ``Z_SYNC_FLUSH``, so every complete record is
on disk, decodable, the moment ``encode`` returns; a process killed at any
point leaves a readable prefix. One shared stream (not a stream per record)
lets later records be compressed against earlier ones: an agent resends its
whole conversation on every LLM call, so that is where the bulk of the
saving comes from (see bench/ and the README's design notes).
"""

from __future__ import annotations

import zlib
from dataclasses import dataclass
from typing import Any

import msgpack

MAGIC = b"\x89ARCAS\r\n"
CONTAINER_DEFLATE_MSGPACK = 1
PREAMBLE = MAGIC + bytes([CONTAINER_DEFLATE_MSGPACK])


class DecodeError(Exception):
    """The bytes are not a cassette stream (message says why)."""


class Encoder:
    """Turns records (plain dicts) into bytes to append, one call per record."""

    def __init__(self, level: int = 6) -> None:
        self._deflate = zlib.compressobj(level, zlib.DEFLATED, -15)

    def preamble(self) -> bytes:
        """Return the bytes that start every cassette file."""
        return PREAMBLE

    def encode(self, record: dict[str, Any]) -> bytes:
        """Return the bytes of one record, complete and decodable on their own."""
        raw = msgpack.packb(record, use_bin_type=True)
        framed = msgpack.packb(zlib.crc32(raw)) + raw
        return self._deflate.compress(framed) + self._deflate.flush(zlib.Z_SYNC_FLUSH)

    def finish(self) -> bytes:
        """Return the bytes that end the deflate stream (marks a clean close)."""
        return self._deflate.flush(zlib.Z_FINISH)


@dataclass(frozen=True, slots=True)
class Decoded:
    """What could be read from a cassette's bytes."""

    records: list[dict[str, Any]]
    """Every complete record, in order."""
    tail_bytes: int
    """Bytes of an incomplete last record (0 when the stream ends on a record boundary)."""


def decode(data: bytes) -> Decoded:
    """Decode every complete record from a cassette's bytes.

    Raises:
        DecodeError: The bytes do not start with the magic prefix, use an
            unknown container, or are damaged (not merely cut short).
    """
    if not data.startswith(MAGIC):
        raise DecodeError("not a cassette (missing the agent-replay file signature)")
    if len(data) <= len(MAGIC):
        return Decoded(records=[], tail_bytes=0)
    container = data[len(MAGIC)]
    if container != CONTAINER_DEFLATE_MSGPACK:
        raise DecodeError(f"unknown container type {container}; written by a newer agent-replay?")
    inflate = zlib.decompressobj(-15)
    try:
        raw = inflate.decompress(data[len(PREAMBLE) :])
    except zlib.error as exc:
        raise DecodeError(f"damaged compressed data ({exc})") from exc
    if inflate.unused_data:
        raise DecodeError(
            f"{len(inflate.unused_data)} unexpected bytes after the end of the stream"
        )
    # max_buffer_size=0 lifts msgpack's size limits, which otherwise derive from the
    # buffer and would call a long list cut short "too long" instead of truncated.
    unpacker = msgpack.Unpacker(raw=False, strict_map_key=False, max_buffer_size=0)
    unpacker.feed(raw)
    records: list[dict[str, Any]] = []
    complete = 0
    try:
        while True:
            crc = unpacker.unpack()
            start = unpacker.tell()
            record = unpacker.unpack()
            if not isinstance(crc, int) or not isinstance(record, dict):
                raise DecodeError(f"record {len(records)} is not framed as a record")
            if zlib.crc32(raw[start : unpacker.tell()]) != crc:
                raise DecodeError(f"record {len(records)} fails its checksum")
            records.append(record)
            complete = unpacker.tell()
    except msgpack.OutOfData:
        pass
    except (msgpack.UnpackException, ValueError, TypeError) as exc:
        raise DecodeError(f"damaged record {len(records)} ({exc})") from exc
    return Decoded(records=records, tail_bytes=len(raw) - complete)
