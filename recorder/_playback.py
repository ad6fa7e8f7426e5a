"""HTTP playback: answer requests from a cassette by exact key, never a near match."""

from __future__ import annotations

import json
from collections import deque
from collections.abc import Iterable
from pathlib import Path
from types import TracebackType
from typing import Any

from . import _session
from ._errors import FixtureUnsupported
from ._ignore import DEFAULT_IGNORE_HOSTS, EMPTY_SUCCESS, IgnoredHosts
from ._nearest import nearest_body
from ._reader import Cassette, read_cassette
from ._redact import Redaction
from ._schema import HttpEvent, HttpRequest, HttpResponse

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
    the exception; the miss still counts). Requests to ignored hosts (the
    recording's ``ignore_hosts`` unless given) get an empty success, never a miss.
    """

    playback = True

    def __init__(
        self, cassette: Cassette | str | Path, *, ignore_hosts: Iterable[str] | None = None
    ) -> None:
        self.cassette = cassette if isinstance(cassette, Cassette) else read_cassette(cassette)
        if ignore_hosts is None:
            ignore_hosts = self.cassette.header.ignore_hosts
        self.ignore_hosts = IgnoredHosts(
            DEFAULT_IGNORE_HOSTS if ignore_hosts is None else ignore_hosts
        )
        """Calls to these are answered with an empty success (the recording's, by default)."""
        self.ignored_calls: dict[str, int] = {}
        spec = self.cassette.header.redaction
        self.redaction = Redaction(
            headers=frozenset(spec.headers),
            query=frozenset(spec.query),
            body_paths=tuple(spec.body_paths),
        )
        self._answers: dict[Key, deque[HttpEvent]] = {}
        self._last: dict[Key, HttpEvent] = {}
        self._bodies: dict[tuple[str, str], list[bytes]] = {}
        self.misses: list[FixtureUnsupported] = []
        self._token: Any = None
        for event in self.cassette.events:
            if isinstance(event, HttpEvent):
                key = self._key(event.request)
                self._answers.setdefault(key, deque()).append(event)
                self._bodies.setdefault(key[:2], []).append(key[2])

    def _key(self, request: HttpRequest) -> Key:
        return (request.method, request.url, _canonical_body(request.body))

    def ignored(self, url: str) -> HttpResponse | bool:
        """The empty success a request to an ignored host gets (counted), else False."""
        entry = self.ignore_hosts.match(url)
        if entry is None:
            return False
        self.ignored_calls[entry] = self.ignored_calls.get(entry, 0) + 1
        return EMPTY_SUCCESS

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
        miss = FixtureUnsupported(
            request=f"{key[0]} {key[1]} ({len(key[2])} body bytes, via {via})",
            nearest=self._nearest(key),
        )
        self.misses.append(miss)
        raise miss

    def _nearest(self, key: Key) -> str | None:
        found = nearest_body(key[2], self._bodies.get(key[:2], []))
        if found is not None:
            body, changes = found
            return f"same method and URL, {len(body)} body bytes, differing in " + "; ".join(
                changes
            )
        others = list(dict.fromkeys(f"{m} {u}" for m, u in self._bodies))
        if not others:
            return None
        listed = ", ".join(others[:3]) + (f" and {len(others) - 3} more" if len(others) > 3 else "")
        return f"nothing to this method and URL; recorded: {listed}"

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
