"""The limits on what a file may make agent-replay build: nesting, numbers, decompressed size.

One place for them, so the reader can refuse what later code cannot take:

- ``MAX_DEPTH`` (100): containers nested deeper in a cassette's values (tool
  arguments and results, deltas, pins) or in a JSON body parsed from one are
  refused. Real traffic nests a dozen levels; every reader after this one
  (the views, the JSON encoder, the graders) recurses and is safe at 100.
- Numbers: floats are finite; integers fit in 64 bits, signed (what SQLite
  and msgpack hold; anything else did not come from a recording).
- Map keys are strings.
- Decompression: a cassette's records, request bodies restored included,
  may take at most ``INFLATE_RATIO`` (1000) times the file's size and never
  more than ``INFLATE_CAP`` (128 MiB); one record at most ``RECORD_CAP``
  (32 MiB; a recording stops before writing a longer one). Measured cassettes
  take 4-8x inflated and 10-25x with their request bodies restored; a
  conversation of n calls restores to about 2n times its file (each call
  resends it), so 1000x leaves room for 500-call conversations while a 6.7 KB
  file can no longer become more than 6.7 MB (Zstandard, which recordings
  write, packs a run of zeros 30,000 to 1 where deflate stops near 1,000: the
  same limit holds for both; real traffic is nowhere near it). The caps bound memory, not only
  the ratio: the reader inflates and decodes a step at a time and refuses at
  the step that passes a cap, holding the records so far (at most 128 MiB;
  10,000 LLM calls take about 105 MiB) and the record being read, whose bytes
  msgpack holds in one buffer (copied once as it grows): a refused file costs
  under 256 MB. A body's own content encoding (gzip, deflate,
  brotli) is undone, for showing, matching and scrubbing, to at most
  ``BODY_RATIO`` (100) times its size and ``BODY_CAP`` (32 MiB); a body
  beyond that is left encoded (and a recording stops before writing one).
"""

from __future__ import annotations

import json
import math
import re
import zlib
from typing import Any

import brotli

MAX_DEPTH = 100
INFLATE_RATIO = 1000
INFLATE_CAP = 128 << 20
RECORD_CAP = 32 << 20
BODY_RATIO = 100
BODY_CAP = 32 << 20
_INT_MIN, _INT_MAX = -(2**63), 2**63 - 1


def inflate_limit(size: int) -> int:
    """Bytes a cassette of ``size`` bytes may decode to (records and restored bodies)."""
    return min(max(size, 1) * INFLATE_RATIO, INFLATE_CAP)


def problem(value: Any, depth: int = 0) -> str | None:
    """Say what in ``value`` is outside the limits (None when nothing is); never recurses."""
    stack: list[tuple[Any, int]] = [(value, depth)]
    while stack:
        item, level = stack.pop()
        if isinstance(item, (str, bytes, bool)) or item is None:
            continue
        if isinstance(item, float):
            if not math.isfinite(item):
                return f"a number that is not finite ({item})"
        elif isinstance(item, int):
            if not _INT_MIN <= item <= _INT_MAX:
                return "an integer that does not fit in 64 bits"
        elif isinstance(item, (list, tuple, dict)):
            if level >= MAX_DEPTH:
                return f"values nested more than {MAX_DEPTH} deep"
            if isinstance(item, dict):
                for key, v in item.items():
                    if not isinstance(key, str):
                        return f"a map key that is not a string ({type(key).__name__})"
                    stack.append((v, level + 1))
            else:
                stack.extend((v, level + 1) for v in item)
        else:
            return f"a value of type {type(item).__name__}"
    return None


def _refuse_constant(name: str) -> Any:
    raise ValueError(f"{name} is not a JSON number")


def _finite(text: str) -> float:
    value = float(text)
    if not math.isfinite(value):
        raise ValueError(f"{text} does not fit in a float")
    return value


_DECODER = json.JSONDecoder(parse_constant=_refuse_constant, parse_float=_finite)
"""One decoder for every call (``json.loads`` with hooks builds a new one each time)."""
_LONG_NUMBER = re.compile(r"\d{19}")
"""Where no 19 digits run together, every integer fits in 64 bits."""


def load_json(data: bytes | str) -> Any:
    """Parse JSON as ``json.loads`` does, within the limits above.

    The parsed value is walked (``problem``) only where the text could hold what the
    limits refuse: more than ``MAX_DEPTH`` brackets in all, or a run of 19 digits (the
    parser itself refuses what is not finite, and JSON's keys are strings). An LLM
    call's reply rarely has either (a recording's footer parses each call's reply).

    Raises:
        ValueError: Not JSON, or outside the limits (NaN, Infinity, 1e999,
            nesting beyond ``MAX_DEPTH``, a key that is not a string cannot
            happen in JSON).
    """
    if isinstance(data, (bytes, bytearray)):
        text = data.decode(json.detect_encoding(data), "surrogatepass")
    elif data.startswith("\ufeff"):
        raise ValueError("JSON text that starts with a byte order mark")
    else:
        text = data
    try:
        value = _DECODER.decode(text)
    except RecursionError:
        raise ValueError(f"JSON nested more than {MAX_DEPTH} deep") from None
    if text.count("{") + text.count("[") > MAX_DEPTH or _LONG_NUMBER.search(text):
        wrong = problem(value)
        if wrong is not None:
            raise ValueError(f"JSON with {wrong}")
    return value


class TooLarge(ValueError):
    """A body's content encoding undoes to more than the body limits."""


def decoded(body: bytes, encoding: str) -> bytes:
    """Undo a body's content encoding within the body limits.

    ``gzip`` (every member), ``deflate`` (zlib or raw) and ``br`` are known.

    Raises:
        TooLarge: It inflates past ``BODY_RATIO`` times its size or ``BODY_CAP``.
        ValueError: Another encoding, or a body that is not what it claims (cut, damaged,
            or already decoded by a client).
    """
    encoding = encoding.strip().lower()
    limit = min(max(len(body), 1) * BODY_RATIO, BODY_CAP)
    if encoding == "br":
        decoder = brotli.Decompressor()
        try:
            plain: bytes = decoder.process(body, output_buffer_limit=limit)
        except brotli.error as exc:
            raise ValueError(f"not brotli: {exc}") from None
        if not decoder.is_finished():
            if len(plain) >= limit:
                raise TooLarge("brotli body past the body limits")
            raise ValueError("brotli body cut short")
        return plain
    if encoding in ("gzip", "x-gzip"):
        return _inflate(body, 16 + zlib.MAX_WBITS, limit, members=True)
    if encoding == "deflate":
        try:
            return _inflate(body, zlib.MAX_WBITS, limit, members=False)
        except TooLarge:
            raise
        except ValueError:
            return _inflate(body, -zlib.MAX_WBITS, limit, members=False)  # raw, as some send it
    raise ValueError(f"no decoder for content encoding {encoding!r}")


def _inflate(body: bytes, wbits: int, limit: int, *, members: bool) -> bytes:
    out, rest = bytearray(), body
    while rest:
        inflater = zlib.decompressobj(wbits)
        try:
            out += inflater.decompress(rest, limit - len(out))
        except zlib.error as exc:
            raise ValueError(f"damaged: {exc}") from None
        if inflater.unconsumed_tail:
            raise TooLarge(f"inflates past {limit} bytes")
        if not inflater.eof:
            raise ValueError("cut short")
        rest = inflater.unused_data
        if rest and not members:
            raise ValueError("bytes after the stream")
    return bytes(out)


def body_too_large(body: bytes, encoding: str) -> bool:
    """Whether undoing a body's content encoding goes past the body limits."""
    try:
        decoded(body, encoding)
    except TooLarge:
        return True
    except ValueError:
        return False  # damaged, cut short or unknown: shown as it is, never inflated
    return False


def decode_body(body: bytes, encoding: str) -> bytes | None:
    """``decoded``, or None when it cannot be (unknown encoding, damaged, too large)."""
    try:
        return decoded(body, encoding)
    except ValueError:
        return None
