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
  more than ``INFLATE_CAP`` (1 GiB). Measured cassettes take 4-8x inflated
  and 10-25x with their request bodies restored; a conversation of n calls
  restores to about 2n times its file (each call resends it), so 1000x
  leaves room for 500-call conversations while a 6.7 KB file can no longer
  become more than 6.7 MB. A body's own content encoding (gzip, deflate) is
  undone, for showing and matching, to at most ``BODY_RATIO`` (100) times
  its size and ``BODY_CAP`` (32 MiB); a body beyond that is left encoded.
"""

from __future__ import annotations

import json
import math
import zlib
from typing import Any

MAX_DEPTH = 100
INFLATE_RATIO = 1000
INFLATE_CAP = 1 << 30
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


def load_json(data: bytes | str) -> Any:
    """Parse JSON as ``json.loads`` does, within the limits above.

    Raises:
        ValueError: Not JSON, or outside the limits (NaN, Infinity, 1e999,
            nesting beyond ``MAX_DEPTH``, a key that is not a string cannot
            happen in JSON).
    """
    try:
        value = json.loads(data, parse_constant=_refuse_constant, parse_float=_finite)
    except RecursionError:
        raise ValueError(f"JSON nested more than {MAX_DEPTH} deep") from None
    wrong = problem(value)
    if wrong is not None:
        raise ValueError(f"JSON with {wrong}")
    return value


def body_too_large(body: bytes, encoding: str) -> bool:
    """Whether undoing a ``gzip``/``deflate`` content encoding goes past the body limits."""
    wbits = {"gzip": 16 + zlib.MAX_WBITS, "deflate": zlib.MAX_WBITS}.get(encoding.lower())
    if wbits is None or not body:
        return False
    limit = min(max(len(body), 1) * BODY_RATIO, BODY_CAP)
    inflate = zlib.decompressobj(wbits)
    try:
        out = inflate.decompress(body, limit)
    except zlib.error:
        return False  # damaged or cut short: shown as it is, never inflated
    return bool(inflate.unconsumed_tail) or (len(out) == limit and bool(inflate.flush(1)))


def decode_body(body: bytes, encoding: str) -> bytes | None:
    """Undo a ``gzip``/``deflate`` content encoding within the body limits; None if it cannot."""
    wbits = {"gzip": 16 + zlib.MAX_WBITS, "deflate": zlib.MAX_WBITS}.get(encoding)
    if wbits is None:
        return None
    limit = min(max(len(body), 1) * BODY_RATIO, BODY_CAP)
    try:
        inflate = zlib.decompressobj(wbits)
        out = inflate.decompress(body, limit)
        if inflate.unconsumed_tail:
            return None  # more than the limit
        return out + inflate.flush()
    except zlib.error:
        return None


loads = load_json
"""(The name the recorder's own modules use.)"""
