"""The compressed streams a cassette's records live in, by container byte.

``ZSTD`` (2) is what recordings write: Zstandard, level 1, each record flushed
as a block, so every complete record is decodable the moment it is written,
and each compressed against all before it (a window of 512 KB, not deflate's
32 KB). It encodes a typical LLM exchange in about a fifth of deflate's time,
decodes it in half, and the file is smaller (``python -m bench.cassette_open``
measures both). ``DEFLATE`` (1), a raw deflate stream flushed with
``Z_SYNC_FLUSH`` after each record, is what earlier versions wrote; it is still
read, and written where asked (``Encoder(container=DEFLATE)``).

Zstandard comes from ``compression.zstd`` where Python has it (3.14) and its
backport, ``backports.zstd``, before: the same module, with the bounded
``decompress(data, max_length)`` a reader of untrusted files needs.
"""

from __future__ import annotations

import sys
import zlib
from collections.abc import Iterator
from typing import Protocol

if sys.version_info >= (3, 14):  # pragma: no cover - the interpreter here is older
    from compression import zstd
else:
    from backports import zstd

DEFLATE = 1
ZSTD = 2
_ZSTD_LEVEL = 1
_WINDOW_LOG_MAX = 23
"""The largest window (8 MiB) a zstd stream may ask its reader to hold; ours use 512 KiB."""
_END_BLOCK = b"\x01\x00\x00"
"""An empty raw block marked last (RFC 8878, 3.1.1.2): ends a frame left open by a flush."""
_FRAME_MAGIC = b"\x28\xb5\x2f\xfd"
_FEED = 1 << 16
"""Compressed bytes given to a decompressor at a time."""


class StreamError(Exception):
    """The compressed stream is damaged (message says how)."""


class Compressor(Protocol):
    """Compresses one record at a time, each decodable once written."""

    def record(self, data: bytes) -> bytes:
        """Return ``data`` compressed and flushed: every byte of it decodable from the file."""
        ...

    def finish(self) -> bytes:
        """Return the bytes that end the stream (a clean close)."""
        ...

    def resumed(self) -> Compressor:
        """A compressor that goes on after the last complete record of this one's stream."""
        ...


class _Deflate:
    def __init__(self, level: int = 6) -> None:
        self._deflate = zlib.compressobj(level, zlib.DEFLATED, -15)

    def record(self, data: bytes) -> bytes:
        return self._deflate.compress(data) + self._deflate.flush(zlib.Z_SYNC_FLUSH)

    def finish(self) -> bytes:
        return self._deflate.flush(zlib.Z_FINISH)

    def resumed(self) -> Compressor:
        # Every record ends byte-aligned with no final block: a fresh raw stream continues it
        # (it only compresses against what it writes itself).
        return _Deflate()


class _Zstd:
    def __init__(self, *, resumed: bool = False) -> None:
        self._zstd = zstd.ZstdCompressor(
            options={
                zstd.CompressionParameter.compression_level: _ZSTD_LEVEL,
                zstd.CompressionParameter.checksum_flag: 0,  # each record has its CRC-32
            }
        )
        self._lead = _END_BLOCK if resumed else b""

    def record(self, data: bytes) -> bytes:
        out: bytes = self._lead + self._zstd.compress(data, zstd.ZstdCompressor.FLUSH_BLOCK)
        self._lead = b""
        return out

    def finish(self) -> bytes:
        out: bytes = self._lead + self._zstd.flush(zstd.ZstdCompressor.FLUSH_FRAME)
        self._lead = b""
        return out

    def resumed(self) -> Compressor:
        # The file ends inside a frame, after a flushed block: an empty last block ends that
        # frame, and a new frame (no history) starts after it.
        return _Zstd(resumed=True)


def compressor(container: int) -> Compressor:
    """A compressor for a container byte (``ZSTD`` or ``DEFLATE``)."""
    return _Zstd() if container == ZSTD else _Deflate()


def pieces(container: int, body: memoryview, step: int) -> Iterator[bytes]:
    """The decompressed stream, at most ``step`` bytes at a time.

    Raises:
        StreamError: Damaged compressed data, or bytes after the stream's end.
    """
    return _inflated(body, step) if container == DEFLATE else _unzstd(body, step)


def _inflated(body: memoryview, step: int) -> Iterator[bytes]:
    inflate = zlib.decompressobj(-15)
    at = 0
    while at < len(body) and not inflate.eof:
        rest: bytes | memoryview = body[at : at + _FEED]
        at += _FEED
        full = True
        while rest or full:  # a full piece may leave output inside the inflater
            try:
                piece = inflate.decompress(rest, step)
            except zlib.error as exc:
                raise StreamError(f"damaged compressed data ({exc})") from exc
            rest, full = inflate.unconsumed_tail, len(piece) == step
            if piece:
                yield piece
    extra = len(inflate.unused_data) + max(len(body) - at, 0)
    if extra:
        raise StreamError(f"{extra} unexpected bytes after the end of the stream")


def _unzstd(body: memoryview, step: int) -> Iterator[bytes]:
    """Frames one after another (a resumed recording starts a new one), each bounded.

    A frame's end is found where its decompressor's unused input starts, and the next
    frame is read from there: nothing of the file is copied (a file of many tiny frames
    costs its length, not its length times its frames).
    """
    options: dict[int, int] = {zstd.DecompressionParameter.window_log_max: _WINDOW_LOG_MAX}
    unzstd = zstd.ZstdDecompressor(options=options)
    at = 0
    while True:
        if unzstd.eof:
            at -= len(unzstd.unused_data)  # where this frame ended
            if at >= len(body):
                return
            if body[at : at + len(_FRAME_MAGIC)] != _FRAME_MAGIC:
                raise StreamError(f"{len(body) - at} unexpected bytes after the end of the stream")
            unzstd = zstd.ZstdDecompressor(options=options)
            continue
        if unzstd.needs_input:
            if at >= len(body):
                return  # cut short (or still being written): the reader counts the tail
            feed: bytes | memoryview = body[at : at + _FEED]
            at += len(feed)
        else:
            feed = b""  # output still inside the decompressor
        try:
            piece = unzstd.decompress(feed, step)
        except zstd.ZstdError as exc:
            raise StreamError(f"damaged compressed data ({exc})") from exc
        if piece:
            yield piece
