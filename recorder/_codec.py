"""Cassette bytes: a magic prefix, then msgpack records in one compressed stream.

Layout: ``MAGIC`` (8 bytes), one container byte naming the compression
(``_streams``: Zstandard, or raw deflate as earlier versions wrote), then the
stream holding, for each record, its CRC-32 (a msgpack integer) followed by
the record (a msgpack map); the CRC catches damage the compression itself
would not (a flipped bit can decode into a different but well-formed value).

An HTTP request body is stored as ``[prefix, middle, suffix]`` when it shares
most of its bytes with the previous request's body: ``prefix``/``suffix`` are
lengths taken from that body. An agent resends its whole conversation on
every LLM call, so this stores each conversation once instead of once per
call, and keeps deflate's 32 KB window from being the limit on long
contexts. Readers get the full body back. After every record the
compressor is flushed, so every complete record is
on disk, decodable, the moment ``encode`` returns; a process killed at any
point leaves a readable prefix. One shared stream (not a stream per record)
lets later records be compressed against earlier ones: an agent resends its
whole conversation on every LLM call, so that is where the bulk of the
saving comes from (see bench/ and the README's design notes).
"""

from __future__ import annotations

import zlib
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import msgpack

from . import _bounds, _streams

MAGIC = b"\x89ARCAS\r\n"
CONTAINER_DEFLATE_MSGPACK = _streams.DEFLATE
CONTAINER_ZSTD_MSGPACK = _streams.ZSTD
PREAMBLE = MAGIC + bytes([CONTAINER_ZSTD_MSGPACK])
"""The bytes that start every cassette written now."""
_DELTA_MIN = 256  # shorter request bodies are always stored whole


def _shared(a: bytes, b: bytes) -> tuple[int, int]:
    """Return the lengths of the prefix and the suffix ``a`` and ``b`` share (not overlapping)."""
    # Bisection on slice equality: bytes compare with memcmp (memoryviews compare item by
    # item, 20x slower), so this costs ~20 us for 20 KB bodies.
    lo, hi = 0, min(len(a), len(b))
    while lo < hi:
        mid = (lo + hi + 1) // 2
        if a[:mid] == b[:mid]:
            lo = mid
        else:
            hi = mid - 1
    prefix = lo
    lo, hi = 0, min(len(a), len(b)) - prefix
    while lo < hi:
        mid = (lo + hi + 1) // 2
        if a[len(a) - mid :] == b[len(b) - mid :]:
            lo = mid
        else:
            hi = mid - 1
    return prefix, lo


class DecodeError(Exception):
    """The bytes are not a cassette stream (message says why)."""


class Encoder:
    """Turns records (plain dicts) into bytes to append, one call per record."""

    def __init__(self, container: int = CONTAINER_ZSTD_MSGPACK) -> None:
        self._container = container
        self._stream = _streams.compressor(container)
        self._last_body = b""

    def preamble(self) -> bytes:
        """Return the bytes that start the cassette file."""
        return MAGIC + bytes([self._container])

    def encode(self, record: dict[str, Any]) -> bytes:
        """Return the bytes of one record, complete and decodable on their own.

        A record msgpack cannot encode raises (``TypeError``, ``OverflowError``,
        ``ValueError``) and leaves the encoder as it was: the next record encodes
        as if this one had never been given.
        """
        last = self._last_body
        try:  # what the reader would refuse is not written (the recording stops instead)
            if record.get("kind") == "http":
                _check_encoded(record, 0)
            else:
                _check(record, 0)
        except DecodeError as exc:
            raise ValueError(str(exc).replace("record 0 ", "the record ", 1)) from None
        if record.get("kind") == "http":
            record, last = self._delta_encode(record)
        raw = msgpack.packb(record, use_bin_type=True)
        if len(raw) > _bounds.RECORD_CAP:
            raise ValueError(_too_long(0).replace("record 0 ", "the record ", 1))
        self._last_body = last
        framed = msgpack.packb(zlib.crc32(raw)) + raw
        return self._stream.record(framed)

    def _delta_encode(self, record: dict[str, Any]) -> tuple[dict[str, Any], bytes]:
        """The record to store (its body a delta when that pays) and its whole body."""
        request = record["request"]
        body = request.get("body", b"")
        last = self._last_body
        if len(body) < _DELTA_MIN or not last:
            return record, body
        prefix, suffix = _shared(last, body)
        if prefix + suffix < len(body) // 2:
            return record, body
        delta = [prefix, body[prefix : len(body) - suffix], suffix]
        return {**record, "request": {**request, "body": delta}}, body

    def resume(self) -> Encoder:
        """Return an encoder that goes on from the last complete record of this one's stream.

        For a writer whose last bytes did not reach the file (``_streams``: each
        container continues its stream after a flushed record); the body deltas start
        anew.
        """
        encoder = Encoder(self._container)
        encoder._stream = self._stream.resumed()
        return encoder

    def finish(self) -> bytes:
        """Return the bytes that end the stream (marks a clean close)."""
        return self._stream.finish()


@dataclass(frozen=True, slots=True)
class Decoded:
    """What could be read from a cassette's bytes."""

    records: list[dict[str, Any]]
    """Every complete record, in order."""
    tail_bytes: int
    """Bytes of an incomplete last record (0 when the stream ends on a record boundary)."""


STEP = 1 << 20
"""Inflated bytes ``decode`` takes at a time: what it holds beyond its records is this much."""


def decode(data: bytes) -> Decoded:
    """Decode every complete record from a cassette's bytes.

    The stream is inflated ``STEP`` bytes at a time and each record is built as its
    bytes arrive, so what is held is the records so far and the one being read; a
    file that decompresses past its limit (``_bounds.inflate_limit``), or a record
    longer than ``_bounds.RECORD_CAP``, is refused at the step that passes it.

    Raises:
        DecodeError: The bytes do not start with the magic prefix, use an
            unknown container, are damaged (not merely cut short), or decompress
            past the limit.
    """
    stream = records(data)
    return Decoded(records=list(stream), tail_bytes=stream.tail_bytes)


def records(data: bytes) -> Records:
    """The complete records of a cassette's bytes, one at a time, as ``decode`` reads them.

    For a reader that builds something of each record: the one just decoded is then
    its last use, so it is freed while its objects are still in the CPU's caches, and
    no list of every record is held. ``tail_bytes`` is set once iterating ends.

    Raises:
        DecodeError: As ``decode`` (from the iteration).
    """
    return Records(data, restore=True, step=STEP)


def decompressed(data: bytes) -> bytes:
    """Return a cassette's record stream decompressed, as bytes (what a secret would hide in).

    Raises:
        DecodeError: As ``decode``.
    """
    return b"".join(Records(data, restore=False, step=STEP)._pieces())


def decode_first(data: bytes, chunk: int = 16_384) -> dict[str, Any] | None:
    """Decode only the first record (the header), inflating no more than it needs.

    Returns None when the bytes hold no complete first record.

    Raises:
        DecodeError: As ``decode``.
    """
    first = decode_leading(data, 1, chunk)
    return first[0] if first else None


def decode_leading(data: bytes, count: int, chunk: int = 16_384) -> list[dict[str, Any]]:
    """Decode only the first ``count`` records, inflating no more than they need.

    Fewer when the bytes hold fewer complete ones. Each is framed and checksummed as
    ``decode`` checks it; an HTTP record's body is left as it is stored (a delta
    against the one before), so read only what the records say of themselves.

    Raises:
        DecodeError: As ``decode``.
    """
    records: list[dict[str, Any]] = []
    if count > 0:
        for record in Records(data, restore=False, step=chunk):
            records.append(record)
            if len(records) == count:
                break
    return records


class Records:
    """The records of a cassette's bytes, inflated and unpacked ``step`` bytes at a time.

    Iterating yields each complete record; ``tail_bytes`` then says how many bytes
    of a cut last record were left. With ``restore``, HTTP request bodies stored
    as deltas are restored and checked (``decode``); without, left as stored.
    """

    def __init__(self, data: bytes, *, restore: bool, step: int) -> None:
        if not data.startswith(MAGIC):
            raise DecodeError("not a cassette (missing the agent-replay file signature)")
        container = data[len(MAGIC)] if len(data) > len(MAGIC) else CONTAINER_ZSTD_MSGPACK
        if container not in (CONTAINER_DEFLATE_MSGPACK, CONTAINER_ZSTD_MSGPACK):
            raise DecodeError(
                f"unknown container type {container}; written by a newer agent-replay?"
            )
        self._data, self._container, self._restore, self._step = data, container, restore, step
        self.limit = _bounds.inflate_limit(len(data))
        self.tail_bytes = 0

    def _pieces(self) -> Iterator[bytes]:
        """The decompressed stream, ``step`` bytes at most at a time, refused past the limit."""
        total = 0
        body = memoryview(self._data)[len(PREAMBLE) :]
        try:
            for piece in _streams.pieces(self._container, body, self._step):
                total += len(piece)
                if total > self.limit:
                    raise DecodeError(_too_big(len(self._data), self.limit))
                yield piece
        except _streams.StreamError as exc:
            raise DecodeError(str(exc)) from exc

    def __iter__(self) -> Iterator[dict[str, Any]]:
        # msgpack's buffer holds the bytes of the record being read, which are checked to
        # stay within RECORD_CAP before each feed: capping the buffer there keeps it from
        # doubling past it. The lengths of lists and maps would otherwise derive from the
        # buffer and call a long list cut short "too long" instead of truncated; one
        # declaring more items than the limit has bytes is refused from its header
        # (msgpack allocates for them before reading them).
        unpacker = msgpack.Unpacker(
            raw=False, strict_map_key=False, max_buffer_size=_bounds.RECORD_CAP,
            max_array_len=self.limit, max_map_len=self.limit,
        )  # fmt: skip
        unpack, tell, crc32, restore = unpacker.unpack, unpacker.tell, zlib.crc32, self._restore
        index, complete, fed, budget, last_body = 0, 0, 0, self.limit, b""
        crc: Any = None  # the checksum of the record being read, once read
        start = running = 0  # where that record starts; the CRC-32 of its bytes before ``at``
        for piece in self._pieces():
            if fed + len(piece) - complete > _bounds.RECORD_CAP:  # before msgpack buffers it
                raise DecodeError(_too_long(index))
            unpacker.feed(piece)
            at, fed = fed, fed + len(piece)
            budget -= len(piece)
            view = memoryview(piece)  # CRCs over slices of it copy nothing
            try:
                while True:
                    if crc is None:
                        crc = unpack()
                        start, running = tell(), 0
                    record = unpack()
                    end = tell()
                    if not isinstance(crc, int) or type(record) is not dict:
                        raise DecodeError(f"record {index} is not framed as a record")
                    if crc32(view[start - at if start > at else 0 : end - at], running) != crc:
                        raise DecodeError(f"record {index} fails its checksum")
                    if record.get("kind") != "http":
                        _check(record, index)
                    elif restore:
                        last_body, added = _restored(record, last_body, index)
                        budget -= added
                        if budget < 0:
                            raise DecodeError(_too_big(len(self._data), self.limit))
                        _check_encoded(record, index)
                    crc, complete, index = None, end, index + 1
                    yield record
            except msgpack.OutOfData:
                if crc is not None:  # a record under way: its bytes in this piece, folded in
                    running = crc32(view[max(start - at, 0) :], running)
            except (msgpack.UnpackException, ValueError, TypeError) as exc:
                if "exceeds max_" in str(exc):
                    raise DecodeError(_too_big(len(self._data), self.limit)) from None
                raise DecodeError(f"damaged record {index} ({exc})") from exc
        self.tail_bytes = fed - complete


def _restored(record: dict[str, Any], last: bytes, index: int) -> tuple[bytes, int]:
    """Restore an HTTP record's delta body in place: (its body, the bytes restoring added).

    The body a delta refers to is the last HTTP record's (``last``); a record with no
    body of its own leaves that one as the reference.
    """
    request = record.get("request")
    if type(request) is not dict:
        return last, 0
    body = request.get("body", b"")
    if type(body) is list:
        if len(body) != 3:
            raise DecodeError(f"record {index} has a malformed request body delta")
        prefix, middle, suffix = body
        if (
            type(prefix) is not int
            or type(suffix) is not int
            or type(middle) is not bytes
            or prefix < 0
            or suffix < 0
            or prefix + suffix > len(last)
        ):
            raise DecodeError(f"record {index} has a malformed request body delta")
        # One join: concatenating would copy the prefix twice.
        body = request["body"] = b"".join((last[:prefix], middle, last[len(last) - suffix :]))
        return body, len(body)
    return (body, 0) if type(body) is bytes else (last, 0)


def _too_big(size: int, limit: int) -> str:
    return (
        f"decompresses to more than {limit:,} bytes, the limit for a {size:,}-byte file "
        f"({_bounds.INFLATE_RATIO}x its size, at most {_bounds.INFLATE_CAP >> 20} MiB)"
    )


def _too_long(index: int) -> str:
    cap = _bounds.RECORD_CAP >> 20
    return f"record {index} is longer than {cap} MiB, the most one record may take"


def _check(record: dict[str, Any], index: int) -> None:
    """Refuse a record holding what no reader after this one can take (see ``_bounds``)."""
    wrong = _bounds.problem(record)
    if wrong is not None:
        raise DecodeError(f"record {index} holds {wrong}")


def _check_encoded(record: dict[str, Any], index: int) -> None:
    """Refuse a response whose content encoding inflates past the body limits.

    A gzip bomb would reach whatever serves or shows it: offline playback hands it
    to the agent.
    """
    response = record.get("response")
    if not isinstance(response, dict) or not isinstance(response.get("headers"), list):
        return
    encoding = None
    try:  # a plain loop: this runs for every record read and written
        for h in response["headers"]:
            if h[0] == "content-encoding":
                encoding = h[1]
                break
    except (TypeError, LookupError):
        return  # not (name, value) pairs: the schema refuses the record
    chunks = response.get("chunks")
    if not isinstance(encoding, str) or not isinstance(chunks, list):
        return
    if all(isinstance(c, bytes) for c in chunks) and _bounds.body_too_large(
        b"".join(chunks), encoding
    ):
        raise DecodeError(
            f"record {index} has a {encoding} response body that inflates past "
            f"{_bounds.BODY_RATIO}x its size or {_bounds.BODY_CAP >> 20} MiB"
        )
