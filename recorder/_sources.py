"""Recorded answers: the one seam HTTP playback, tool playback and the frozen user answer through.

A source is built from a cassette's (request, answer) pairs and ``match_on``,
a tuple of named matchers (vcrpy's ``match_on``): each matcher turns a request
into one hashable part, and a request's key is the tuple of its parts, so a
lookup is one dict access. The matchers live in registries, one per channel
(``HTTP_MATCHERS``, ``TOOL_MATCHERS``, ``USER_MATCHERS``), which the built-ins
are entries of and a user adds to: a new way to match is an entry, not a branch.

The policy for repeats and exhaustion, the same for every source:

- identical requests (the same key) get the recorded answers in recorded
  order, each answer used once;
- a request whose recorded answers are all used is a miss, like one never
  recorded: ``FixtureUnsupported`` saying how many times it was recorded.
  The last answer is never repeated: that would be a guess;
- every miss is also kept in ``misses``, because agent code (and an SDK's
  retry loop) may swallow the exception; the trial is then ``unsupported``.
"""

from __future__ import annotations

import json
from collections import deque
from collections.abc import Callable, Hashable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Generic, Protocol, TypeVar
from urllib.parse import parse_qsl, urlsplit

from ._errors import FixtureUnsupported
from ._schema import HttpRequest

R = TypeVar("R")
E = TypeVar("E")
R_contra = TypeVar("R_contra", contravariant=True)
E_co = TypeVar("E_co", covariant=True)

Key = tuple[Hashable, ...]


class Source(Protocol[R_contra, E_co]):
    """A replay source: answers a request from a recording, or misses.

    Example, a source that knows one answer::

        class Fixed:
            def __init__(self) -> None:
                self.misses: list[FixtureUnsupported] = []

            def answer(self, request: str) -> str:
                if request == "ping":
                    return "pong"
                miss = FixtureUnsupported(request=repr(request))
                self.misses.append(miss)
                raise miss
    """

    @property
    def misses(self) -> list[FixtureUnsupported]:
        """Every request this source could not answer, in order."""
        ...

    def answer(self, request: R_contra) -> E_co:
        """Return the recorded answer to ``request``.

        Raises:
            FixtureUnsupported: The recording holds no unused answer for it
                (the miss is also appended to ``misses``).
        """
        ...


@dataclass(frozen=True, slots=True)
class ToolRequest:
    """A tool call to answer: what ``TOOL_MATCHERS`` read."""

    name: str
    args: Mapping[str, Any]


@dataclass(frozen=True, slots=True)
class UserTurn:
    """A turn asked of a frozen user: what ``USER_MATCHERS`` read."""

    index: int
    """0-based: the opening message is turn 0."""
    said: str | None
    """What the agent said before it (None for the opening)."""


class RecordedAnswers(Generic[R, E]):
    """Answers requests from recorded (request, answer) pairs, by a key of named matchers.

    The module docstring states the policy (each recorded answer used once, in
    order; exhausted or unseen is a miss, never a guess).

    Args:
        recorded: (request, answer) pairs in recorded order.
        match_on: Names of the matchers whose parts make the key.
        matchers: The registry the names are looked up in; read here, once,
            so a later change to the registry does not change this source.
        describe: How a miss names the request (one line).
        nearest: How a miss of an unrecorded key names the nearest recorded
            request and how it differs (None: the matchers that differ).

    Raises:
        ValueError: ``match_on`` is empty or names an unknown matcher.

    Example, tool calls answered by name and canonical arguments::

        answers = RecordedAnswers(
            ((ToolRequest(e.name, e.args), e) for e in tool_events),
            match_on=("name", "arguments"),
            matchers=TOOL_MATCHERS,
        )
        event = answers.answer(ToolRequest("lookup", {"order_id": 7.0}))  # recorded with 7
    """

    def __init__(
        self,
        recorded: Iterable[tuple[R, E]],
        *,
        match_on: Sequence[str],
        matchers: Mapping[str, Callable[[R], Hashable]],
        describe: Callable[[R], str] = repr,
        nearest: Callable[[R], str | None] | None = None,
    ) -> None:
        self.match_on = _checked(match_on, matchers)
        self._parts = tuple(matchers[name] for name in self.match_on)
        self._describe = describe
        self._nearest = nearest if nearest is not None else self.nearest_by_parts
        self._answers: dict[Key, deque[E]] = {}
        self._requests: dict[Key, R] = {}  # the first recorded request of each key
        self._recorded: dict[Key, int] = {}
        self.misses: list[FixtureUnsupported] = []
        for request, answer in recorded:
            key = self.key(request)
            self._answers.setdefault(key, deque()).append(answer)
            self._requests.setdefault(key, request)
            self._recorded[key] = self._recorded.get(key, 0) + 1

    def key(self, request: R) -> Key:
        """The request's key: one part per matcher in ``match_on``."""
        return tuple(part(request) for part in self._parts)

    def answer(self, request: R, *, what: str | None = None) -> E:
        """Return the next unused recorded answer to ``request``.

        Args:
            request: The request to answer.
            what: How a miss names it (default: ``describe(request)``).

        Raises:
            FixtureUnsupported: Nothing recorded for this key, or all its
                answers are used; the miss is also appended to ``misses``.
        """
        key = self.key(request)
        queue = self._answers.get(key)
        if queue is not None:
            try:
                return queue.popleft()  # atomic: two threads never get the same answer
            except IndexError:
                nearest: str | None = _exhausted(self._recorded[key])
        else:
            nearest = self._nearest(request)
        miss = FixtureUnsupported(
            request=what if what is not None else self._describe(request), nearest=nearest
        )
        self.misses.append(miss)
        raise miss

    def recorded(self) -> list[tuple[Key, R]]:
        """Each recorded key with its first recorded request, in recorded order."""
        return list(self._requests.items())

    def nearest_by_parts(self, request: R) -> str | None:
        """The recorded request sharing most parts with ``request``, and the matchers that differ.

        A scan of the recorded keys: it runs on a miss only, never on a hit.
        """
        key = self.key(request)
        best: tuple[int, R, list[str]] | None = None
        for theirs, recorded in self._requests.items():
            differ = [n for n, a, b in zip(self.match_on, theirs, key, strict=True) if a != b]
            if best is None or len(differ) < best[0]:
                best = (len(differ), recorded, differ)
        if best is None:
            return None
        return f"{self._describe(best[1])}, differing in {', '.join(best[2])}"


def _checked(match_on: Sequence[str], matchers: Mapping[str, Any]) -> tuple[str, ...]:
    if isinstance(match_on, str):
        raise TypeError(f"match_on is a sequence of matcher names, not a string: ({match_on!r},)")
    names = tuple(match_on)
    known = ", ".join(sorted(matchers))
    if not names:
        raise ValueError(f"match_on names no matcher; choose from: {known}")
    for name in names:
        if name not in matchers:
            raise ValueError(
                f"unknown matcher {name!r} in match_on; known: {known} "
                "(register a new one in the channel's matcher registry)"
            )
    return names


def _exhausted(times: int) -> str:
    if times == 1:
        return (
            "this same request, recorded once; its answer is already used "
            "(a recorded answer is used once, never repeated)"
        )
    return (
        f"this same request, recorded {times} times; all {times} answers are already used "
        "(a recorded answer is used once, never repeated)"
    )


# -- HTTP ---------------------------------------------------------------------


def canonical_body(body: bytes) -> bytes:
    """A JSON body with sorted keys and no spaces; any other body as it is."""
    if body[:1] in (b"{", b"["):
        try:
            return json.dumps(json.loads(body), sort_keys=True, separators=(",", ":")).encode()
        except (ValueError, RecursionError):
            pass
    return body


def _query(request: HttpRequest) -> Hashable:
    return tuple(sorted(parse_qsl(urlsplit(request.url).query, keep_blank_values=True)))


HTTP_MATCHERS: dict[str, Callable[[HttpRequest], Hashable]] = {
    "method": lambda r: r.method,
    "url": lambda r: r.url,
    "body": lambda r: canonical_body(r.body),
    "scheme": lambda r: urlsplit(r.url).scheme,
    "host": lambda r: urlsplit(r.url).hostname,
    "port": lambda r: urlsplit(r.url).port,
    "path": lambda r: urlsplit(r.url).path,
    "query": _query,
}
"""HTTP matchers by name: each takes the request (redacted, as recorded) to one part.

``body`` is the canonical JSON body; ``query`` the query's (name, value)
pairs, sorted. Add an entry to match another way, e.g. ignoring a query
parameter: ``HTTP_MATCHERS["url_sans_ts"] = lambda r: r.url.split("&ts=")[0]``,
then ``playback(path, match_on=("method", "url_sans_ts", "body"))``.
"""

HTTP_MATCH_ON = ("method", "url", "body")  # what HTTP playback matches on unless told


# -- tools --------------------------------------------------------------------


def canonical_args(args: Mapping[str, Any]) -> str:
    """Tool arguments as canonical JSON: sorted keys, 35 and 35.0 the same number."""
    return json.dumps(_numbers(dict(args)), sort_keys=True, default=str, separators=(",", ":"))


def _numbers(value: Any) -> Any:
    if isinstance(value, float) and value.is_integer():
        return int(value)
    if isinstance(value, dict):
        return {k: _numbers(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_numbers(v) for v in value]
    return value


TOOL_MATCHERS: dict[str, Callable[[ToolRequest], Hashable]] = {
    "name": lambda c: c.name,
    "arguments": lambda c: canonical_args(c.args),
}
"""Tool-call matchers by name (``arguments``: canonical JSON of the arguments)."""

# -- the frozen user ----------------------------------------------------------

USER_MATCHERS: dict[str, Callable[[UserTurn], Hashable]] = {
    "turn": lambda t: t.index,
    "said": lambda t: t.said,
}
"""Frozen-user matchers by name: the turn's number, or what the agent said before it."""
