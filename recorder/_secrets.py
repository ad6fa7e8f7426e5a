"""Secrets learned and given: every value remembered is scrubbed from all a recording writes."""

from __future__ import annotations

import base64
import binascii
import json
import re
from collections.abc import Iterable
from typing import Any
from urllib.parse import quote, quote_plus

from ._bounds import MAX_DEPTH

PLACEHOLDER = "[REDACTED]"
MIN_SECRET = 8
"""Shorter secrets are replaced where they stand but not searched for in free text."""
_PLACEHOLDER_BYTES = PLACEHOLDER.encode()


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
        self._values: set[str] = set()
        self._text: re.Pattern[str] | None = None
        self._bytes: re.Pattern[bytes] | None = None
        for value in values:
            self.add(value)

    def __bool__(self) -> bool:
        return bool(self._values)

    def values(self) -> set[str]:
        """The secrets remembered (a copy)."""
        return set(self._values)

    def update(self, other: Secrets) -> None:
        """Remember every secret ``other`` holds."""
        for value in other._values:
            self.add(value)

    def add(self, value: str) -> None:
        """Remember a secret (and the token of a ``Scheme <token>`` value)."""
        parts = value.split()
        candidates = [value, parts[1]] if len(parts) == 2 else [value]
        for plain in list(candidates):  # as it appears inside JSON text and URL-encoded
            candidates += [json.dumps(plain)[1:-1], json.dumps(plain, ensure_ascii=False)[1:-1]]
            candidates += [quote(plain, safe=""), quote_plus(plain)]
        for part in dict.fromkeys(candidates):
            if len(part) >= MIN_SECRET and part != PLACEHOLDER and part not in self._values:
                self._values.add(part)
                self._text = self._bytes = None

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

    def _pattern(self) -> re.Pattern[str] | None:
        if self._text is None and self._values:
            ordered = sorted(self._values, key=len, reverse=True)
            self._text = re.compile("|".join(re.escape(v) for v in ordered))
        return self._text

    def _byte_pattern(self) -> re.Pattern[bytes] | None:
        if self._bytes is None and self._values:
            ordered = sorted((v.encode() for v in self._values), key=len, reverse=True)
            self._bytes = re.compile(b"|".join(re.escape(v) for v in ordered))
        return self._bytes

    def scrub(self, text: str) -> str:
        """Return ``text`` with every remembered secret replaced."""
        pattern = self._pattern()
        return pattern.sub(PLACEHOLDER, text) if pattern is not None else text

    def scrub_bytes(self, data: bytes) -> bytes:
        """Return ``data`` with every remembered secret replaced (an echoed key, say)."""
        pattern = self._byte_pattern()
        if pattern is None:
            return data
        return pattern.sub(_PLACEHOLDER_BYTES, data)

    def scrub_chunks(self, chunks: list[bytes]) -> list[bytes]:
        """Return chunks with every secret replaced, one split across chunks too.

        The chunks keep their number: a secret is replaced in the chunk where it
        starts and its rest is cut from the chunks after it.
        """
        pattern = self._byte_pattern()
        if pattern is None or not chunks:
            return chunks
        if len(chunks) == 1:
            return [pattern.sub(_PLACEHOLDER_BYTES, chunks[0])]
        joined = b"".join(chunks)
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
