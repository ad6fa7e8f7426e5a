"""The nearest recorded request to one a playback cannot answer, and how they differ.

A miss is the moment a user has to find out what drifted (a prompt, a tool
schema), so the message names the differing JSON paths with short before and
after values: ``messages[2].content: "Order 2 mugs" -> "Order 3 mugs"``.
Finding the nearest is cheap first (shared prefix and suffix of the canonical
bodies, a memcmp each), then exact on the few best (a walk of both documents).
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

from . import _bounds

_SHORTLIST = 4
_MAX_PATHS = 4
_MAX_VALUE = 40
_CONTEXT = 12  # characters kept before the first difference of two long strings
_MAX_DEPTH = 64
_MISSING = object()


class _Items(int):
    """A list's length, where two lists differ in length."""

    def __repr__(self) -> str:
        return f"{int(self)} items"


def nearest_body(body: bytes, recorded: Sequence[bytes]) -> tuple[bytes, list[str]] | None:
    """Return the recorded body closest to ``body`` and the differences, in words."""
    if not recorded:
        return None
    shortlist = sorted(set(recorded), key=lambda r: -_shared(body, r))[:_SHORTLIST]
    mine = _json(body)
    best: tuple[int, bytes, list[tuple[str, Any, Any]] | None] | None = None
    for candidate in shortlist:
        theirs = _json(candidate)
        found: list[tuple[str, Any, Any]] | None = None
        count = 1 << 30
        if mine is not _MISSING and theirs is not _MISSING:
            found = []
            _walk(theirs, mine, "", found, 0)
            count = len(found)
        if best is None or count < best[0]:
            best = (count, candidate, found)
    assert best is not None
    _, candidate, found = best
    if found is None:
        return candidate, [f"body: {len(candidate)} bytes -> {len(body)} bytes (not JSON)"]
    changes = [_say(path, a, b) for path, a, b in found[:_MAX_PATHS]]  # only what is shown
    if len(found) > _MAX_PATHS:
        changes.append(f"and {len(found) - _MAX_PATHS} more")
    return candidate, changes


def _shared(a: bytes, b: bytes) -> int:
    """Bytes ``a`` and ``b`` share at their start plus at their end."""
    start = _prefix(a, b)
    return start + _suffix(a[start:], b[start:])


_BLOCK = 4096


def _prefix(a: bytes, b: bytes) -> int:
    """Length of the common prefix: block by block, then a binary search in the block.

    Each comparison is a memcmp of a short slice, so a long shared prefix (an
    agent resends its whole conversation) costs little.
    """
    n, i = min(len(a), len(b)), 0
    while i + _BLOCK <= n and a[i : i + _BLOCK] == b[i : i + _BLOCK]:
        i += _BLOCK
    lo, hi = i, min(n, i + _BLOCK)
    while lo < hi:
        mid = (lo + hi + 1) // 2
        if a[i:mid] == b[i:mid]:
            lo = mid
        else:
            hi = mid - 1
    return lo


def _suffix(a: bytes, b: bytes) -> int:
    """Length of the common suffix, as ``_prefix`` finds the prefix."""
    n, i = min(len(a), len(b)), 0
    while (
        i + _BLOCK <= n
        and a[len(a) - i - _BLOCK : len(a) - i] == b[len(b) - i - _BLOCK : len(b) - i]
    ):
        i += _BLOCK
    lo, hi = i, min(n, i + _BLOCK)
    while lo < hi:
        mid = (lo + hi + 1) // 2
        if a[len(a) - mid : len(a) - i] == b[len(b) - mid : len(b) - i]:
            lo = mid
        else:
            hi = mid - 1
    return lo


def _json(body: bytes) -> Any:
    if body[:1] not in (b"{", b"["):
        return _MISSING
    try:
        return _bounds.load_json(body)
    except ValueError:
        return _MISSING


def _walk(a: Any, b: Any, path: str, out: list[tuple[str, Any, Any]], depth: int) -> None:
    """Append (path, recorded, now) for each leaf where ``a`` and ``b`` differ."""
    if a == b:
        return
    if depth >= _MAX_DEPTH:
        out.append((path, a, b))
    elif isinstance(a, dict) and isinstance(b, dict):
        for key in [*a, *(k for k in b if k not in a)]:
            _walk(a.get(key, _MISSING), b.get(key, _MISSING), _key(path, key), out, depth + 1)
    elif isinstance(a, list) and isinstance(b, list):
        for i in range(min(len(a), len(b))):
            _walk(a[i], b[i], f"{path}[{i}]", out, depth + 1)
        if len(a) != len(b):
            out.append((f"{path}[{min(len(a), len(b))}:]", _Items(len(a)), _Items(len(b))))
    else:
        out.append((path, a, b))


def _key(path: str, key: str) -> str:
    name = key if key.isidentifier() else json.dumps(key)
    return f"{path}.{name}" if path else name


def _say(path: str, a: Any, b: Any) -> str:
    if isinstance(a, str) and isinstance(b, str):  # show where they part, not how they begin
        start = max(0, _prefix(a.encode(), b.encode()) - _CONTEXT)
        if start:
            a, b = (
                a.encode()[start:].decode(errors="ignore"),
                b.encode()[start:].decode(errors="ignore"),
            )
            return f"{path}: …{_short(a)[1:]} -> …{_short(b)[1:]}"
    return f"{path or 'body'}: {_short(a)} -> {_short(b)}"


def _short(value: Any) -> str:
    if value is _MISSING:
        return "(absent)"
    if isinstance(value, _Items):
        return repr(value)
    text = json.dumps(value, ensure_ascii=False, default=str)
    return text if len(text) <= _MAX_VALUE else text[: _MAX_VALUE - 1] + "…"
