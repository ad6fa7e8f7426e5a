"""Redaction: secrets are replaced before anything reaches disk.

The placeholder is a constant, so a request redacted at playback time has
the same matching key as the one redacted at record time.
"""

from __future__ import annotations

import json
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


@dataclass(frozen=True, slots=True)
class Redaction:
    """What to redact from recorded HTTP traffic.

    Attributes:
        headers: Header names (any case) whose values are replaced.
        query: Query-parameter names whose values are replaced.
        body_paths: Dotted paths into JSON bodies (request and unencoded
            response bodies); ``*`` matches every key or list item, e.g.
            ``"api_key"``, ``"auth.token"``, ``"messages.*.secret"``.
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
        object.__setattr__(self, "_paths", tuple(paths))

    def redact_headers(self, headers: Headers) -> Headers:
        """Return headers with secret values replaced; names are lower-cased."""
        return [
            (name, PLACEHOLDER if name in self.headers else value)
            for name, value in ((n.lower(), v) for n, v in headers)
        ]

    def redact_url(self, url: str) -> str:
        """Return the URL with secret query-parameter values replaced."""
        parts = urlsplit(url)
        if not parts.query:
            return url
        pairs = parse_qsl(parts.query, keep_blank_values=True)
        if not any(k in self.query for k, _ in pairs):
            return url
        query = urlencode([(k, PLACEHOLDER if k in self.query else v) for k, v in pairs], safe="[]")
        return urlunsplit(parts._replace(query=query))

    def redact_body(self, body: bytes) -> bytes:
        """Return a JSON body with the configured paths replaced; other bodies unchanged."""
        if not self._paths or not body or body[:1] not in (b"{", b"["):
            return body
        try:
            doc = json.loads(body)
        except ValueError:
            return body
        changed = False
        for path in self._paths:
            changed |= _redact_path(doc, path)
        return json.dumps(doc, separators=(",", ":")).encode() if changed else body


def _redact_path(node: Any, path: tuple[str, ...]) -> bool:
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
            changed |= _redact_path(node[key], rest)
        elif node[key] != PLACEHOLDER:
            node[key] = PLACEHOLDER
            changed = True
    return changed
