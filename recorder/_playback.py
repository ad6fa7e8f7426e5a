"""HTTP playback: answer requests from a cassette by exact key, never a near match."""

from __future__ import annotations

import json
from collections.abc import Hashable, Iterable, Sequence
from pathlib import Path
from types import TracebackType
from typing import Any

from . import _session
from ._errors import FixtureUnsupported
from ._ignore import DEFAULT_IGNORE_HOSTS, EMPTY_SUCCESS, IgnoredHosts
from ._nearest import nearest_body
from ._reader import Cassette, read_cassette
from ._redact import Redaction, Secrets
from ._schema import HttpEvent, HttpRequest, HttpResponse
from ._sources import HTTP_MATCH_ON, HTTP_MATCHERS, RecordedAnswers
from ._volatile import VolatileFields

_LABELS = {"url": "URL"}


class Playback:
    """Serves recorded HTTP responses, with their recorded chunks, while active.

    A recorded transport error is raised again (after the chunks that arrived
    before it, if any).

    A request is matched on ``match_on``, names from ``recorder.HTTP_MATCHERS``
    (by default method, URL and body, JSON compared canonically), after the
    same redaction as at record time: a dict lookup, not a scan. Identical
    requests get the recorded responses in recorded order, each used once;
    once those run out, the request is a miss like one the cassette never saw
    (the last response is not repeated: that would be a guess). A miss raises
    ``FixtureUnsupported``, naming the nearest recorded request and the JSON
    paths where the bodies differ, and is kept in ``misses`` (agent code may
    swallow the exception; the miss still counts). Requests to ignored hosts
    (the recording's ``ignore_hosts`` unless given) get an empty success,
    never a miss.

    Args:
        cassette: The recording, or its path.
        ignore_hosts: Hosts answered with an empty success (default: the recording's).
        match_on: Names of the matchers that make a request's key.
        secrets: Values scrubbed from live requests before they are matched (the
            ones the recording was told of), besides the credentials learned from
            the requests themselves.
        ignore_fields: Fields that change on every run, left out of the recorded and
            the live requests before they are matched (``VolatileFields``: a body path
            ``metadata.user_id``, ``query:ts``, ``header:x-request-id``, a preset
            ``@claude-code``); a miss's message shows none of them.
        refuse: Answer a miss with ``refusal`` (HTTP 400 that no SDK retries, the
            miss in its error body) instead of raising it; it counts in ``misses``
            all the same. What the harness's frozen LLM does: an SDK wraps a raised
            miss as a connection error and asks again, a 400 it reports at once.

    Raises:
        ValueError: ``match_on`` names a matcher ``HTTP_MATCHERS`` does not hold.
    """

    playback = True

    def __init__(
        self,
        cassette: Cassette | str | Path,
        *,
        ignore_hosts: Iterable[str] | None = None,
        match_on: Sequence[str] = HTTP_MATCH_ON,
        secrets: Secrets | Iterable[str] = (),
        refuse: bool = False,
        ignore_fields: Iterable[str] = (),
    ) -> None:
        self.refuse = refuse
        self.volatile = VolatileFields(tuple(ignore_fields))
        """Fields left out of every request, recorded and live, before it is matched."""
        self.cassette = cassette if isinstance(cassette, Cassette) else read_cassette(cassette)
        if ignore_hosts is None:
            ignore_hosts = self.cassette.header.ignore_hosts
        self.ignore_hosts = IgnoredHosts(
            DEFAULT_IGNORE_HOSTS if ignore_hosts is None else ignore_hosts
        )
        """Calls to these are answered with an empty success (the recording's, by default)."""
        self.ignored_calls: dict[str, int] = {}
        self.redaction = Redaction.from_spec(self.cassette.header.redaction)
        self.secrets = secrets if isinstance(secrets, Secrets) else Secrets(secrets)
        """Scrubbed from live requests before they are matched, as they were when recorded;
        learned from live requests as they come (a recording answered from this playback
        shares them)."""
        self.answers: RecordedAnswers[HttpRequest, HttpEvent] = RecordedAnswers(
            (
                (self.volatile.strip(e.request), e)
                for e in self.cassette.events
                if isinstance(e, HttpEvent)
            ),
            match_on=match_on,
            matchers=HTTP_MATCHERS,
            describe=_describe,
            nearest=self._nearest,
        )
        """The recorded exchanges, by key; every source answers through one of these."""
        self._token: Any = None
        # For a miss's message: the recorded bodies of each key with the body left out.
        names = self.answers.match_on
        self._body_at = names.index("body") if "body" in names else None
        self._others = " and ".join(_LABELS.get(n, n) for n in names if n != "body")
        self._bodies: dict[tuple[Hashable, ...], list[bytes]] = {}
        if self._body_at is not None:
            for key, _ in self.answers.recorded():
                body = key[self._body_at]
                if isinstance(body, bytes):
                    self._bodies.setdefault(self._rest(key), []).append(body)

    @property
    def misses(self) -> list[FixtureUnsupported]:
        """Every request this playback could not answer, in order."""
        return self.answers.misses

    def _rest(self, key: tuple[Hashable, ...]) -> tuple[Hashable, ...]:
        i = self._body_at
        return key if i is None else key[:i] + key[i + 1 :]

    def ignored(self, url: str) -> HttpResponse | bool:
        """The empty success a request to an ignored host gets (counted), else False."""
        entry = self.ignore_hosts.match(url)
        if entry is None:
            return False
        self.ignored_calls[entry] = self.ignored_calls.get(entry, 0) + 1
        return EMPTY_SUCCESS

    def respond(self, request: HttpRequest, *, via: str) -> HttpEvent:
        """Return the recorded exchange for ``request`` or raise ``FixtureUnsupported``.

        Args:
            request: The request as the client sent it (redacted here, as at record time).
            via: The client it came through, named in a miss.
        """
        redacted = self.redaction.redact_request(request, self.secrets)
        try:
            stripped = self.volatile.strip(redacted)  # (and so the miss names no ignored field)
            return self.answers.answer(stripped, what=_describe(stripped, via))
        except FixtureUnsupported as miss:
            if not self.refuse:
                raise
            answer = refusal(f"agent-replay: FixtureUnsupported: {miss}")
            return HttpEvent(t=0.0, duration=0.0, via=via, request=redacted, response=answer)

    def answer(self, request: HttpRequest) -> HttpEvent:
        """``respond`` for a caller that is not an interceptor (the ``Source`` protocol)."""
        return self.respond(request, via="playback")

    def _nearest(self, request: HttpRequest) -> str | None:
        key = self.answers.key(request)
        if self._body_at is None:
            return self.answers.nearest_by_parts(request)
        body = key[self._body_at]
        found = (
            nearest_body(body, self._bodies.get(self._rest(key), []))
            if isinstance(body, bytes)
            else None
        )
        if found is not None:
            recorded, changes = found
            return f"same {self._others}, {len(recorded)} body bytes, differing in " + "; ".join(
                changes or ["nothing the body matcher compares"]
            )
        others = list(dict.fromkeys(f"{r.method} {r.url}" for _, r in self.answers.recorded()))
        if not others:
            return None
        listed = ", ".join(others[:3]) + (f" and {len(others) - 3} more" if len(others) > 3 else "")
        return f"nothing to this {self._others}; recorded: {listed}"

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


def refusal(message: str, *, status: int = 400) -> HttpResponse:
    """The answer to a request the harness refuses (a miss, a host not allowed...).

    HTTP 400 with ``x-should-retry: false`` (asking again cannot change the answer;
    the OpenAI and Anthropic SDKs, which retry a 5xx or a connection error, heed it)
    and the error body both read, so that their exception's message is ``message``.
    A ``status`` of 500 or more (an LLM that could not be reached) may be retried.
    """
    kind = "invalid_request_error" if status < 500 else "api_error"
    error = {"type": kind, "message": message.replace("\n", " ")}
    body = json.dumps({"type": "error", "error": error}).encode()
    headers = [("content-type", "application/json"), ("content-length", str(len(body)))]
    if status < 500:
        headers.append(("x-should-retry", "false"))
    return HttpResponse(status=status, headers=headers, chunks=[body])


def _describe(request: HttpRequest, via: str | None = None) -> str:
    how = f", via {via}" if via else ""
    return f"{request.method} {request.url} ({len(request.body)} body bytes{how})"
