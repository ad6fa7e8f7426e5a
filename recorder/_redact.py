"""Redaction: secrets are replaced before anything reaches disk.

The placeholder is a constant, so a request redacted at playback time has
the same matching key as the one redacted at record time. Every secret value
removed from a request is also remembered (``Secrets``) and scrubbed from
error messages and tracebacks, which often quote URLs and headers.
"""

from __future__ import annotations

import copy
import gzip
import json
import re
import zlib
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import parse_qsl, unquote, unquote_plus, urlencode, urlsplit, urlunsplit

import brotli

from ._bounds import decode_body
from ._errors import ConfigError
from ._schema import HttpRequest, RedactionSpec
from ._secret_names import secret_named
from ._secrets import PLACEHOLDER as PLACEHOLDER  # (re-exported: the older home of both)
from ._secrets import Secrets as Secrets

DEFAULT_HEADERS = frozenset(
    {"authorization", "proxy-authorization", "x-api-key", "api-key", "cookie", "set-cookie"}
)
DEFAULT_QUERY = frozenset({"key", "api_key", "token", "access_token"})

Headers = list[tuple[str, str]]
_URL = re.compile(r"\b[a-zA-Z][a-zA-Z0-9+.-]*://[^\s'\"<>]+")
_FORM = "application/x-www-form-urlencoded"


@dataclass(frozen=True, slots=True)
class Redaction:
    """What to redact from recorded HTTP traffic.

    Attributes:
        headers: Header names (any case) whose values are replaced, besides every
            header named like a secret (``secret_named``: ``x-goog-api-key``,
            ``x-auth-token``...).
        query: Query-parameter names (any case) whose values are replaced; in a
            form body (``application/x-www-form-urlencoded``) these and every
            field named like a secret (``api_key``, ``client_secret``...).
        body_paths: Dotted paths into JSON bodies — requests, responses
            (gzip/deflate bodies are decoded, redacted and re-encoded) and each
            ``data:`` event of a streamed response; ``*`` matches every key or
            list item, e.g. ``"api_key"``, ``"auth.token"``, ``"items.*.secret"``.
        tool_paths: Dotted paths into tool calls, ``TOOL.args.PATH`` or
            ``TOOL.result.PATH`` (``*`` for any tool), e.g. ``"*.args.card_number"``,
            ``"get_customer.result.ssn"``. A value found there is replaced and, as
            every redacted value, scrubbed wherever else it appears (the next LLM
            request, say).

    Every value redacted is also a secret scrubbed from all a recording writes
    (``Secrets``); offline replay redacts live calls the same way before it
    matches them.
    """

    headers: frozenset[str] = DEFAULT_HEADERS
    query: frozenset[str] = DEFAULT_QUERY
    body_paths: tuple[str, ...] = ()
    tool_paths: tuple[str, ...] = ()
    _paths: tuple[tuple[str, ...], ...] = field(init=False, repr=False, compare=False)
    _tools: tuple[tuple[str, str, tuple[str, ...]], ...] = field(
        init=False, repr=False, compare=False
    )

    def __post_init__(self) -> None:
        paths = [_dotted(path, "body") for path in self.body_paths]
        tools = []
        for path in self.tool_paths:
            parts = _dotted(path, "tool")
            if len(parts) < 3 or parts[1] not in ("args", "result"):
                raise ConfigError(
                    f"redaction tool path {path!r} is not TOOL.args.PATH or TOOL.result.PATH "
                    "(e.g. '*.args.api_key')"
                )
            tools.append((parts[0], parts[1], parts[2:]))
        object.__setattr__(self, "headers", frozenset(h.lower() for h in self.headers))
        object.__setattr__(self, "query", frozenset(q.lower() for q in self.query))
        object.__setattr__(self, "body_paths", tuple(self.body_paths))
        object.__setattr__(self, "tool_paths", tuple(self.tool_paths))
        object.__setattr__(self, "_paths", tuple(paths))
        object.__setattr__(self, "_tools", tuple(tools))

    @classmethod
    def from_spec(cls, spec: RedactionSpec) -> Redaction:
        """The redaction a cassette was recorded with (its header's ``redaction``)."""
        return cls(
            headers=frozenset(spec.headers),
            query=frozenset(spec.query),
            body_paths=tuple(spec.body_paths),
            tool_paths=tuple(spec.tool_paths),
        )

    def redact_tool(self, name: str, part: str, value: Any, seen: Secrets | None = None) -> Any:
        """Return a tool call's ``args`` or ``result`` (JSON-ready) with its paths replaced."""
        paths = [p for tool, where, p in self._tools if where == part and tool in ("*", name)]
        if not paths or not isinstance(value, (dict, list)):
            return value
        value = copy.deepcopy(value)
        for path in paths:
            _redact_path(value, path, seen)
        return value

    def redact_headers(self, headers: Headers, seen: Secrets | None = None) -> Headers:
        """Return headers with secret values replaced; names are lower-cased.

        Replaced are the ``headers`` named and every header named like a secret;
        the credentials each carried are learned (``Secrets.add_header``).
        """
        out = []
        for name, value in headers:
            name = name.lower()
            if name in self.headers or secret_named(name):
                if seen is not None and value != PLACEHOLDER:
                    seen.add_header(name, value)
                value = PLACEHOLDER
            out.append((name, value))
        return out

    def redact_url(self, url: str, seen: Secrets | None = None) -> str:
        """Return the URL with secret query values replaced and any ``user:password@`` removed."""
        try:
            parts = urlsplit(url)
        except ValueError:
            return url
        if "@" in parts.netloc:  # credentials leave the URL: it stays a URL (hosts, LLM paths)
            userinfo, host = parts.netloc.rsplit("@", 1)
            if seen is not None:
                seen.add(userinfo)
                for part in userinfo.split(":", 1):
                    seen.add(part)
                    seen.add(unquote(part))
            parts = parts._replace(netloc=host)
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

    def redact_request(self, request: HttpRequest, seen: Secrets) -> HttpRequest:
        """Return a request as recorded: redacted, credentials learned, then every secret scrubbed.

        Playback passes live requests through this same function before matching them.
        """
        url = self.redact_url(request.url, seen)
        headers = self.redact_headers(request.headers, seen)
        body = self.redact_body(request.body, seen)
        if any(k.lower() == "content-type" and v.lower().startswith(_FORM) for k, v in headers):
            body = self.redact_form(body, seen)
        if not seen:
            return HttpRequest(method=request.method, url=url, headers=headers, body=body)
        return HttpRequest(
            method=request.method,
            url=seen.scrub(url),
            headers=seen.scrub_pairs(headers),
            body=seen.scrub_bytes(body),
        )

    def redact_form(self, body: bytes, seen: Secrets | None = None) -> bytes:
        """Return a form body with the values of secret fields replaced, the rest as it came.

        Secret fields are the ``query`` names and those named like a secret
        (``secret_named``); their values are learned, decoded.
        """
        fields = body.split(b"&")
        changed = False
        for i, item in enumerate(fields):
            name, eq, value = item.partition(b"=")
            key = unquote_plus(name.decode("utf-8", "replace"))
            if not eq or value == PLACEHOLDER.encode():
                continue
            if key.lower() in self.query or secret_named(key):
                if seen is not None:
                    seen.add(unquote_plus(value.decode("utf-8", "replace")))
                fields[i] = name + b"=" + PLACEHOLDER.encode()
                changed = True
        return b"&".join(fields) if changed else body

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
        encode = _ENCODERS.get(encoding.strip().lower())
        if encode is not None:
            plain = decode_body(body, encoding)
            again = encode if plain is not None else None
            plain = body if plain is None else plain  # (None: already decoded by the client)
            redacted = self._redact_document_or_stream(plain, seen)
            if redacted is plain:
                return chunks
            return [again(redacted)] if again is not None else [redacted]
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
            "tool_paths": list(self.tool_paths),
        }


def scrub_response(chunks: list[bytes], encoding: str, seen: Secrets) -> list[bytes]:
    """Return response chunks with every secret replaced, in the body as decoded too.

    A gzip, deflate or brotli body with a secret inside is decoded (within the
    reader's limits, ``_bounds.decoded``), scrubbed and encoded again (one
    chunk); any other body is scrubbed chunk by chunk, a secret split across
    chunks too (``Secrets.scrub_chunks``).
    """
    if not seen or not chunks:
        return chunks
    encode = _ENCODERS.get(encoding.strip().lower())
    if encode is not None:
        plain = decode_body(b"".join(chunks), encoding)
        if plain is not None:  # (None: already decoded by the client, or past the limits)
            scrubbed = seen.scrub_bytes(plain)
            return chunks if scrubbed == plain else [encode(scrubbed)]
    return seen.scrub_chunks(chunks)


_ENCODERS: dict[str, Callable[[bytes], bytes]] = {
    "gzip": lambda b: gzip.compress(b, mtime=0),
    "x-gzip": lambda b: gzip.compress(b, mtime=0),
    "deflate": zlib.compress,
    "br": brotli.compress,
}


def _dotted(path: str, what: str) -> tuple[str, ...]:
    parts = tuple(path.split("."))
    if not path or any(not p for p in parts):
        raise ConfigError(f"redaction {what} path {path!r} is not a dotted path like 'a.b.c'")
    return parts


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
