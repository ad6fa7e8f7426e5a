"""Redaction: secrets are replaced before anything reaches disk.

The placeholder is a constant, so a request redacted at playback time has
the same matching key as the one redacted at record time. Every secret value
removed from a request is also remembered (``Secrets``) and scrubbed from
error messages and tracebacks, which often quote URLs and headers.
"""

from __future__ import annotations

import gzip
import json
import re
import zlib
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import parse_qsl, urlencode, urlsplit, urlunsplit

from ._errors import ConfigError

PLACEHOLDER = "[REDACTED]"

DEFAULT_HEADERS = frozenset(
    {"authorization", "proxy-authorization", "x-api-key", "api-key", "cookie", "set-cookie"}
)
DEFAULT_QUERY = frozenset({"key", "api_key", "token", "access_token"})

Headers = list[tuple[str, str]]
_URL = re.compile(r"\b[a-zA-Z][a-zA-Z0-9+.-]*://[^\s'\"<>]+")
_MIN_SECRET = 8  # shorter values are not scrubbed from free text (too many false hits)
_NOT_CREDENTIALS = frozenset({"cookie", "set-cookie"})


class Secrets:
    """Secret values seen while redacting, to scrub from error texts and response bodies.

    Only credentials are remembered (auth header values, redacted query and body
    values, URL userinfo), not cookies: servers set fresh cookies on every
    response, and their attributes (``Path=/``, dates) are not secrets.
    Request bodies are never scrubbed: they are playback keys.
    """

    def __init__(self) -> None:
        self._values: set[str] = set()
        self._pattern: re.Pattern[str] | None = None

    def add(self, value: str) -> None:
        """Remember a secret (and the token of a ``Scheme <token>`` value)."""
        parts = value.split()
        candidates = [value, parts[1]] if len(parts) == 2 else [value]
        for part in candidates:
            if len(part) >= _MIN_SECRET and part != PLACEHOLDER and part not in self._values:
                self._values.add(part)
                self._pattern = None

    def _compiled(self) -> re.Pattern[str] | None:
        if self._pattern is None and self._values:
            ordered = sorted(self._values, key=len, reverse=True)
            self._pattern = re.compile("|".join(re.escape(v) for v in ordered))
        return self._pattern

    def scrub(self, text: str) -> str:
        """Return ``text`` with every remembered secret replaced."""
        pattern = self._compiled()
        return pattern.sub(PLACEHOLDER, text) if pattern is not None else text

    def scrub_bytes(self, data: bytes) -> bytes:
        """Return ``data`` with every remembered secret replaced (an echoed key, say)."""
        pattern = self._compiled()
        if pattern is None:
            return data
        text = data.decode("utf-8", "surrogateescape")
        scrubbed = pattern.sub(PLACEHOLDER, text)
        return data if scrubbed == text else scrubbed.encode("utf-8", "surrogateescape")


@dataclass(frozen=True, slots=True)
class Redaction:
    """What to redact from recorded HTTP traffic.

    Attributes:
        headers: Header names (any case) whose values are replaced.
        query: Query-parameter names (any case) whose values are replaced.
        body_paths: Dotted paths into JSON bodies — requests, responses
            (gzip/deflate bodies are decoded, redacted and re-encoded) and each
            ``data:`` event of a streamed response; ``*`` matches every key or
            list item, e.g. ``"api_key"``, ``"auth.token"``, ``"items.*.secret"``.
    """

    headers: frozenset[str] = DEFAULT_HEADERS
    query: frozenset[str] = DEFAULT_QUERY
    body_paths: tuple[str, ...] = ()
    _paths: tuple[tuple[str, ...], ...] = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        paths = []
        for path in self.body_paths:
            parts = tuple(path.split("."))
            if not path or any(not p for p in parts):
                raise ConfigError(f"redaction body path {path!r} is not a dotted path like 'a.b.c'")
            paths.append(parts)
        object.__setattr__(self, "headers", frozenset(h.lower() for h in self.headers))
        object.__setattr__(self, "query", frozenset(q.lower() for q in self.query))
        object.__setattr__(self, "_paths", tuple(paths))

    def redact_headers(self, headers: Headers, seen: Secrets | None = None) -> Headers:
        """Return headers with secret values replaced; names are lower-cased."""
        out = []
        for name, value in headers:
            name = name.lower()
            if name in self.headers:
                if seen is not None and name not in _NOT_CREDENTIALS:
                    seen.add(value)
                value = PLACEHOLDER
            out.append((name, value))
        return out

    def redact_url(self, url: str, seen: Secrets | None = None) -> str:
        """Return the URL with secret query values and any user:password replaced."""
        try:
            parts = urlsplit(url)
        except ValueError:
            return url
        if "@" in parts.netloc:
            userinfo, host = parts.netloc.rsplit("@", 1)
            if seen is not None:
                seen.add(userinfo)
            parts = parts._replace(netloc=f"{PLACEHOLDER}@{host}")
            url = urlunsplit(parts)
        if not parts.query:
            return url
        pairs = parse_qsl(parts.query, keep_blank_values=True)
        if not any(k.lower() in self.query for k, _ in pairs):
            return url
        redacted = []
        for k, v in pairs:
            if k.lower() in self.query:
                if seen is not None:
                    seen.add(v)
                v = PLACEHOLDER
            redacted.append((k, v))
        return urlunsplit(parts._replace(query=urlencode(redacted, safe="[]")))

    def redact_text(self, text: str, seen: Secrets) -> str:
        """Return free text (an error message) with known secrets and URL secrets replaced."""
        return _URL.sub(lambda m: self.redact_url(m.group(0)), seen.scrub(text))

    def redact_body(self, body: bytes, seen: Secrets | None = None) -> bytes:
        """Return a JSON body with the configured paths replaced; other bodies unchanged."""
        if not self._paths or not body:
            return body
        start = body.lstrip(b" \t\r\n\xef\xbb\xbf")[:1]
        if start not in (b"{", b"["):
            return body
        try:
            doc = json.loads(body.decode("utf-8-sig"))
        except ValueError:
            return body
        changed = False
        for path in self._paths:
            changed |= _redact_path(doc, path, seen)
        return json.dumps(doc, separators=(",", ":")).encode() if changed else body

    def redact_response_body(
        self, chunks: list[bytes], encoding: str, seen: Secrets | None = None
    ) -> list[bytes]:
        """Return response chunks with body paths redacted, keeping chunks when possible."""
        if not self._paths or not chunks:
            return chunks
        body = b"".join(chunks)
        encoding = encoding.lower()
        if encoding in ("gzip", "deflate"):
            try:
                plain = gzip.decompress(body) if encoding == "gzip" else zlib.decompress(body)
            except (OSError, zlib.error, EOFError):
                plain = body  # already decoded by the client library
                encoding = ""
            redacted = self._redact_document_or_stream(plain, seen)
            if redacted is plain:
                return chunks
            if encoding == "gzip":
                return [gzip.compress(redacted, mtime=0)]
            return [zlib.compress(redacted)] if encoding == "deflate" else [redacted]
        if body.lstrip()[:1] in (b"{", b"["):
            redacted = self.redact_body(body, seen)
            return chunks if redacted is body else [redacted]
        # A stream of events: redact each chunk's data lines, so chunks stay as they came.
        out = [_redact_sse(self, chunk, seen) for chunk in chunks]
        joined = _redact_sse(self, body, seen)
        if joined != b"".join(out):
            return [joined]  # an event split across chunks: only the joined stream redacts it
        return out

    def _redact_document_or_stream(self, body: bytes, seen: Secrets | None) -> bytes:
        if body.lstrip()[:1] in (b"{", b"["):
            return self.redact_body(body, seen)
        redacted = _redact_sse(self, body, seen)
        return body if redacted == body else redacted

    def spec(self) -> dict[str, list[str]]:
        """Return the settings as stored in a cassette header."""
        return {
            "headers": sorted(self.headers),
            "query": sorted(self.query),
            "body_paths": list(self.body_paths),
        }


def _redact_sse(red: Redaction, chunk: bytes, seen: Secrets | None) -> bytes:
    lines = chunk.split(b"\n")
    changed = False
    for i, line in enumerate(lines):
        if line.startswith(b"data:"):
            payload = line[5:].strip()
            redacted = red.redact_body(payload, seen)
            if redacted is not payload:
                lines[i] = b"data: " + redacted
                changed = True
    return b"\n".join(lines) if changed else chunk


def _redact_path(node: Any, path: tuple[str, ...], seen: Secrets | None) -> bool:
    head, rest = path[0], path[1:]
    if isinstance(node, dict):
        keys = list(node) if head == "*" else [head] if head in node else []
    elif isinstance(node, list):
        if head == "*":
            keys = list(range(len(node)))
        elif head.isdigit() and int(head) < len(node):
            keys = [int(head)]
        else:
            keys = []
    else:
        return False
    changed = False
    for key in keys:
        if rest:
            changed |= _redact_path(node[key], rest, seen)
        elif node[key] != PLACEHOLDER:
            if seen is not None and isinstance(node[key], str):
                seen.add(node[key])
            node[key] = PLACEHOLDER
            changed = True
    return changed
