"""Secrets learned and given: every value remembered is scrubbed from all a recording writes."""

from __future__ import annotations

import base64
import binascii
import contextlib
import itertools
import json
import re
import struct
import threading
from collections.abc import Iterable
from functools import lru_cache
from typing import Any
from urllib.parse import quote, quote_plus

from ._bounds import MAX_DEPTH

PLACEHOLDER = "[REDACTED]"
MIN_SECRET = 8
"""Shorter secrets are replaced where they stand but not searched for in free text."""
_PLACEHOLDER_BYTES = PLACEHOLDER.encode()
_UNCHANGED = re.compile(r"[A-Za-z0-9_.~-]*")
"""What JSON strings and URL encoding (``quote``, ``quote_plus``) leave as it is."""


class Secrets:
    """Secret values to scrub from every byte a recording writes.

    It learns credentials while redacting (the values of headers named like
    secrets, a Basic auth's user and password decoded, each cookie's value but
    not its attributes, redacted query, form and body values, URL userinfo and
    its parts) and is told others (``add``: the values a user lists, the
    harness's ``--allow-env`` values and secret-named settings).
    Values shorter than ``MIN_SECRET`` characters are replaced where they stand
    (a header, a URL, a configured path) but not searched for in free text: too
    many false hits.

    Live requests pass through the same scrub before they are matched, so a
    body that carried a secret when recorded matches the body that carries it
    (or another key learned the same way) when replayed.
    """

    def __init__(self, values: Iterable[str] = ()) -> None:
        self._lock = threading.Lock()
        """Held while the values change and while a scrub reads the index: trials run in threads."""
        self._values: set[str] = set()
        self._given: set[str] = set()
        """Every value ``add`` was given: one given again (each request's key) adds nothing."""
        self._index = _Index()
        """Each secret as text and as its UTF-8 bytes read as Latin-1 (``_as_bytes``): the
        two are one entry for an ASCII secret, so bytes are searched as Latin-1 text."""
        for value in values:
            self.add(value)

    def __bool__(self) -> bool:
        return bool(self._values)

    def values(self) -> set[str]:
        """The secrets remembered (a copy)."""
        with self._lock:
            return set(self._values)

    def update(self, other: Secrets) -> None:
        """Remember every secret ``other`` holds."""
        for value in other.values():
            self.add(value)

    def add(self, value: str) -> None:
        """Remember a secret (and the token of a ``Scheme <token>`` value)."""
        if value in self._given:
            return
        parts = value.split()
        candidates = [value, parts[1]] if len(parts) == 2 else [value]
        for plain in list(candidates):  # as it appears inside JSON text and URL-encoded
            if _UNCHANGED.fullmatch(plain):  # (most tokens: both leave them as they are)
                continue
            candidates += [json.dumps(plain)[1:-1], json.dumps(plain, ensure_ascii=False)[1:-1]]
            candidates += [quote(plain, safe=""), quote_plus(plain)]
        with self._lock:
            self._given.add(value)
            for part in dict.fromkeys(candidates):
                if len(part) >= MIN_SECRET and part != PLACEHOLDER and part not in self._values:
                    self._values.add(part)
                    self._index.add(part)
                    with contextlib.suppress(UnicodeEncodeError):  # a lone surrogate: no
                        view = part.encode().decode("latin-1")  # UTF-8 bytes can hold it
                        if view != part:
                            self._index.add(view)

    def add_header(self, name: str, value: str) -> None:
        """Remember the credentials a header named like a secret carries.

        Its value; a ``Basic`` one's ``user:password`` and each part, decoded; a
        cookie's value (``Cookie``: each one's; ``Set-Cookie``: the one it sets,
        not its attributes, ``Path=/`` and dates).
        """
        name = name.lower()
        if name in ("cookie", "set-cookie"):
            pairs = value.split(";") if name == "cookie" else value.split(";")[:1]
            for pair in pairs:
                self.add(pair.partition("=")[2].strip().strip('"'))
            return
        self.add(value)
        scheme, _, token = value.strip().partition(" ")
        if scheme.lower() == "basic" and token:
            try:
                pair = base64.b64decode(token.strip(), validate=True).decode("utf-8", "replace")
            except (binascii.Error, ValueError):
                return
            self.add(pair)
            for part in pair.split(":", 1):
                self.add(part)

    def _pattern(self, text: str) -> re.Pattern[str] | None:
        """The alternation of the secrets ``text`` holds, or None if it holds none."""
        with self._lock:
            found = self._index.found_in(text)
        return _text_alternation(found) if found else None

    def _byte_pattern(self, data: bytes) -> re.Pattern[bytes] | None:
        with self._lock:
            found = self._index.found_in(data.decode("latin-1"), data)
        return _byte_alternation(frozenset(map(_as_bytes, found))) if found else None

    def scrub(self, text: str) -> str:
        """Return ``text`` with every remembered secret replaced."""
        pattern = self._pattern(text)
        return pattern.sub(PLACEHOLDER, text) if pattern is not None else text

    def scrub_pairs(self, pairs: list[tuple[str, str]]) -> list[tuple[str, str]]:
        """Return (name, value) pairs (headers) with every remembered secret replaced in values.

        One look over all the values joined (most hold none), rather than one per value.
        """
        if not self._values or not pairs or self._pattern("\n".join(v for _, v in pairs)) is None:
            return pairs
        return [(k, self.scrub(v)) for k, v in pairs]

    def scrub_bytes(self, data: bytes) -> bytes:
        """Return ``data`` with every remembered secret replaced (an echoed key, say)."""
        pattern = self._byte_pattern(data)
        if pattern is None:
            return data
        return pattern.sub(_PLACEHOLDER_BYTES, data)

    def scrub_chunks(self, chunks: list[bytes]) -> list[bytes]:
        """Return chunks with every secret replaced, one split across chunks too.

        The chunks keep their number: a secret is replaced in the chunk where it
        starts and its rest is cut from the chunks after it.
        """
        if not self._values or not chunks:
            return chunks
        if len(chunks) == 1:
            return [self.scrub_bytes(chunks[0])]
        joined = b"".join(chunks)
        pattern = self._byte_pattern(joined)
        if pattern is None:
            return chunks
        spans = [m.span() for m in pattern.finditer(joined)]
        if not spans:
            return chunks
        out, start, first = [], 0, 0  # spans are in order: each chunk looks from ``first`` on
        for chunk in chunks:
            end = start + len(chunk)
            piece, at = bytearray(), start
            while first < len(spans) and spans[first][1] <= start:
                first += 1
            for s, e in spans[first:]:
                if s >= end:
                    break
                piece += joined[at : max(s, at)]
                if s >= start:
                    piece += _PLACEHOLDER_BYTES
                at = min(e, end)
            piece += joined[at:end]
            out.append(bytes(piece))
            start = end
        return out

    def scrub_value(self, value: Any) -> Any:
        """Return a JSON-ready value with secrets replaced in every string (keys too)."""
        if not self._values:
            return value
        return _scrub_value(self, value, 0)


class _Index:
    """Which remembered secrets a text holds, at a cost that does not grow with their number.

    One alternation of every secret tries each of them at every position of
    the text (28 ms for 1,000 secrets over 5 KB), and a recording learns one
    or more with each response (its ``Set-Cookie`` value), so that pattern
    grew all along a recording and was compiled again after every response.

    Instead, a secret at least ``2k - 1`` long holds, wherever it occurs, a
    whole block ``text[j*k : j*k + k]`` starting in its first ``k``
    characters. Each secret is filed under these ``k`` pieces of it, ``k``
    chosen by its length (4 for ``MIN_SECRET``, up to 32); a scrub cuts the
    text into blocks once per ``k`` in use (in C), intersects them with the
    index and checks the few secrets filed there with ``in``. Adding a secret
    costs at most 32 pieces, however many are known.

    A text of Latin-1 (ASCII: most headers and bodies) is cut as its bytes, by
    ``struct`` (five times as fast as a regular expression's ``.{k}``), and its
    blocks looked up among the pieces' Latin-1 bytes; any other text by the pattern.
    """

    def __init__(self) -> None:
        self._first: dict[int, dict[str, str]] = {}
        """By ``k``: each piece and the first secret filed under it."""
        self._more: dict[int, dict[str, set[str]]] = {}
        """By ``k``: the pieces several secrets share, and all of those."""
        self._bytes: dict[int, dict[bytes, str]] = {}
        """By ``k``: each piece's Latin-1 bytes (of those Latin-1 holds), and the piece."""
        self._shortest = 0

    def add(self, value: str) -> None:
        """File ``value`` under the ``k`` pieces of it that start in its first ``k``."""
        width = _width(len(value))
        first = self._first.setdefault(width, {})
        pieces = [value[at : at + width] for at in range(width)]
        with contextlib.suppress(UnicodeEncodeError):  # (beyond Latin-1: in no such text)
            raw = value.encode("latin-1")  # (a byte a character: its pieces line up)
            as_bytes = self._bytes.setdefault(width, {})
            as_bytes.update(zip([raw[at : at + width] for at in range(width)], pieces, strict=True))
        fresh = dict.fromkeys(pieces, value)
        for piece in fresh.keys() & first.keys():  # rare: one set per shared piece
            self._more.setdefault(width, {}).setdefault(piece, {first[piece]}).add(value)
            del fresh[piece]
        first.update(fresh)
        self._shortest = min(self._shortest, len(value)) if self._shortest else len(value)

    def found_in(self, text: str, latin: bytes | None = None) -> frozenset[str]:
        """Return the secrets ``text`` holds (the caller holds the lock).

        ``latin``: ``text`` as Latin-1 bytes, where the caller has them (an ASCII text's
        are made here).
        """
        if not self._shortest or len(text) < self._shortest:
            return frozenset()
        if latin is None and text.isascii():
            latin = text.encode("ascii")
        found: set[str] = set()
        for width, first in self._first.items():
            more = self._more.get(width, {})
            if latin is not None:
                as_bytes = self._bytes.get(width, {})
                pieces: Iterable[str] = [as_bytes[b] for b in as_bytes.keys() & _cut(latin, width)]
            else:
                pieces = first.keys() & _TEXT_BLOCKS[width].findall(text)
            for piece in pieces:
                found.update(v for v in more.get(piece, (first[piece],)) if v in text)
        return frozenset(found)


_CUT_MOST = 4096
"""Blocks one ``struct`` cuts at most (a longer text is cut in turns)."""


@lru_cache(maxsize=64)
def _cutter(width: int, blocks: int) -> struct.Struct:
    return struct.Struct(f"{width}s" * blocks)


def _cut(data: bytes, width: int) -> Iterable[bytes]:
    """``data``'s blocks ``data[j*k : j*k + k]``, in C.

    A last shorter one is padded with zero bytes: a secret filed under what it then
    reads is checked for with ``in``, and not found.
    """
    if not data:
        return ()
    count = -(-len(data) // width)
    cut = _cutter(width, min(_CUT_MOST, 1 << (count - 1).bit_length()))
    padded = data + bytes(-len(data) % cut.size)
    if len(padded) == cut.size:
        return cut.unpack_from(padded)
    return itertools.chain.from_iterable(
        cut.unpack_from(padded, at) for at in range(0, len(padded), cut.size)
    )


_WIDTHS = (4, 8, 16, 32)
_TEXT_BLOCKS = {k: re.compile(f".{{{k}}}", re.S) for k in _WIDTHS}


def _width(length: int) -> int:
    """The largest block size ``k`` a secret this long holds whole wherever it occurs."""
    return max(k for k in _WIDTHS if 2 * k - 1 <= length)


@lru_cache(maxsize=256)
def _text_alternation(values: frozenset[str]) -> re.Pattern[str]:
    """One pattern for ``values``, the longest first: where two start, the longer is replaced."""
    return re.compile("|".join(re.escape(v) for v in sorted(values, key=len, reverse=True)))


def _as_bytes(found: str) -> bytes:
    """The bytes a secret found in Latin-1-read bytes stands for (one per character).

    A text secret whose characters all fit in Latin-1 but not ASCII is found this way
    too, as those single bytes: replaced where they stand, which at worst replaces
    bytes that were never its UTF-8.
    """
    return found.encode("latin-1")


@lru_cache(maxsize=256)
def _byte_alternation(values: frozenset[bytes]) -> re.Pattern[bytes]:
    """``_text_alternation`` for bytes."""
    return re.compile(b"|".join(re.escape(v) for v in sorted(values, key=len, reverse=True)))


def _scrub_value(seen: Secrets, value: Any, depth: int) -> Any:
    if isinstance(value, str):
        return seen.scrub(value)
    if depth > MAX_DEPTH:  # deeper than a cassette may hold: nothing of it is kept
        return PLACEHOLDER
    if isinstance(value, dict):
        return {
            (seen.scrub(k) if isinstance(k, str) else k): _scrub_value(seen, v, depth + 1)
            for k, v in value.items()
        }
    if isinstance(value, (list, tuple)):
        return [_scrub_value(seen, v, depth + 1) for v in value]
    if isinstance(value, bytes):
        return seen.scrub_bytes(value)
    return value
