"""HTTP playback: answer requests from a cassette by exact key, never a near match."""

from __future__ import annotations

import json
from collections import deque
from pathlib import Path
from types import TracebackType
from typing import Any

from . import _session
from ._errors import FixtureUnsupported
from ._reader import Cassette, read_cassette
from ._redact import Redaction
from ._schema import HttpEvent, HttpRequest

Key = tuple[str, str, bytes]


def _canonical_body(body: bytes) -> bytes:
    if body[:1] in (b"{", b"["):
        try:
            return json.dumps(json.loads(body), sort_keys=True, separators=(",", ":")).encode()
        except ValueError:
            pass
    return body


class Playback:
    """Serves recorded HTTP responses, with their recorded chunks, while active.

    A recorded transport error is raised again (after the chunks that arrived
    before it, if any).

    A request is matched on method, URL and body (JSON compared canonically),
    after the same redaction as at record time: a dict lookup, not a scan.
    Identical requests get the recorded responses in order; once those run
    out, the last is repeated. A request the cassette never saw raises
    ``FixtureUnsupported`` and is kept in ``misses`` (agent code may swallow
    the exception; the miss still counts).
    """

    playback = True

    def __init__(self, cassette: Cassette | str | Path) -> None:
        self.cassette = cassette if isinstance(cassette, Cassette) else read_cassette(cassette)
        spec = self.cassette.header.redaction
        self.redaction = Redaction(
            headers=frozenset(spec.headers),
            query=frozenset(spec.query),
            body_paths=tuple(spec.body_paths),
        )
        self._answers: dict[Key, deque[HttpEvent]] = {}
        self._last: dict[Key, HttpEvent] = {}
        self._by_url: dict[tuple[str, str], Key] = {}
        self.misses: list[FixtureUnsupported] = []
        self._token: Any = None
        for event in self.cassette.events:
            if isinstance(event, HttpEvent):
                key = self._key(event.request)
                self._answers.setdefault(key, deque()).append(event)
                self._by_url.setdefault(key[:2], key)

    def _key(self, request: HttpRequest) -> Key:
        return (request.method, request.url, _canonical_body(request.body))

    def respond(self, request: HttpRequest, *, via: str) -> HttpEvent:
        """Return the recorded exchange for ``request`` or raise ``FixtureUnsupported``."""
        red = self.redaction
        key = self._key(
            HttpRequest(
                method=request.method,
                url=red.redact_url(request.url),
                headers=[],
                body=red.redact_body(request.body),
            )
        )
        queue = self._answers.get(key)
        if queue:
            self._last[key] = queue.popleft()
            return self._last[key]
        if key in self._last:
            return self._last[key]
        near = self._by_url.get(key[:2])
        miss = FixtureUnsupported(
            request=f"{key[0]} {key[1]} ({len(key[2])} body bytes, via {via})",
            nearest=f"same method and URL with a different body ({len(near[2])} bytes)"
            if near
            else None,
        )
        self.misses.append(miss)
        raise miss

    def __enter__(self) -> Playback:
        self._token = _session.enter(self)
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        _session.leave(self, self._token)


playback = Playback
"""Serve HTTP from a cassette: ``with playback("x.cassette"):``."""
