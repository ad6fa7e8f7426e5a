"""Fields that change on every run, left out when a request is matched to its recording.

Claude Code sends a fresh ``metadata.user_id`` with each session, clients add
request ids and timestamps: such a request never matches its recording, so an
agent that sends one cannot be replayed offline. ``VolatileFields`` names what
to leave out, and ``strip`` takes it out of a request (the recorded ones and the
live one alike) before its key is made: a JSON body path (dotted, ``*`` for any
key or list item, as redaction's), a query parameter (``query:NAME``) or a
header (``header:NAME``). A name beginning with ``@`` is a preset (``IGNORE_FIELD_PRESETS``).
The nearest-miss message of a request that still differs shows no ignored field.
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import parse_qsl, urlencode, urlsplit, urlunsplit

from ._errors import ConfigError
from ._schema import HttpRequest

IGNORE_FIELD_PRESETS: dict[str, tuple[str, ...]] = {
    "claude-code": ("metadata.user_id",),
    "request-ids": ("user", "metadata.user_id", "metadata.session_id", "header:x-request-id"),
    "stream-options": ("stream_options",),
}
"""Named sets of fields (``@claude-code``...): what known clients send anew on each run.
A preset more is an entry more."""


@dataclass(frozen=True)
class VolatileFields:
    """Fields left out of a request before it is matched (see the module's docstring).

    Attributes:
        fields: As given: ``metadata.user_id``, ``query:ts``, ``header:x-request-id``,
            ``@claude-code``.

    Raises:
        ConfigError: A field that is no path, or an unknown preset.
    """

    fields: tuple[str, ...] = ()
    _body: tuple[tuple[str, ...], ...] = field(init=False, repr=False, compare=False)
    _query: frozenset[str] = field(init=False, repr=False, compare=False)
    _headers: frozenset[str] = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        body, query, headers = [], set(), set()
        for given in _expanded(self.fields):
            where, colon, name = given.partition(":")
            if not colon:
                where, name = "body", given
            if where == "query" and name:
                query.add(name)
            elif where == "header" and name:
                headers.add(name.lower())
            elif where == "body" and name and all(name.split(".")):
                body.append(tuple(name.split(".")))
            else:
                raise ConfigError(
                    f"ignore field {given!r} is not a body path ('metadata.user_id', "
                    "'messages.*.id'), 'query:NAME' or 'header:NAME'"
                )
        object.__setattr__(self, "fields", tuple(self.fields))
        object.__setattr__(self, "_body", tuple(body))
        object.__setattr__(self, "_query", frozenset(query))
        object.__setattr__(self, "_headers", frozenset(headers))

    def __bool__(self) -> bool:
        return bool(self._body or self._query or self._headers)

    def strip(self, request: HttpRequest) -> HttpRequest:
        """``request`` without the fields (the same object when it has none of them)."""
        update: dict[str, Any] = {}
        if self._body and request.body[:1] in (b"{", b"["):
            try:
                document = json.loads(request.body)
            except (ValueError, RecursionError):
                document = None
            if document is not None and any(_drop(document, path) for path in self._body):
                update["body"] = json.dumps(document, sort_keys=True).encode()
        if self._query:
            parts = urlsplit(request.url)
            pairs = parse_qsl(parts.query, keep_blank_values=True)
            kept = [(k, v) for k, v in pairs if k not in self._query]
            if parts.query:  # (every query written again alike: recorded and live compare)
                update["url"] = urlunsplit(parts._replace(query=urlencode(kept)))
        if self._headers:
            kept_headers = [(k, v) for k, v in request.headers if k.lower() not in self._headers]
            if len(kept_headers) != len(request.headers):
                update["headers"] = kept_headers
        return request.model_copy(update=update) if update else request


def _expanded(fields: Iterable[str]) -> list[str]:
    out: list[str] = []
    for given in fields:
        if given.startswith("@"):
            if given[1:] not in IGNORE_FIELD_PRESETS:
                known = ", ".join(f"@{name}" for name in IGNORE_FIELD_PRESETS)
                raise ConfigError(f"unknown ignore-field preset {given!r}; known: {known}")
            out += IGNORE_FIELD_PRESETS[given[1:]]
        else:
            out.append(given.strip())
    return out


def _drop(node: Any, path: tuple[str, ...]) -> bool:
    """Delete ``path`` from ``node`` (``*``: every key or item); whether anything went."""
    head, rest = path[0], path[1:]
    if isinstance(node, dict):
        keys: list[Any] = list(node) if head == "*" else [head] if head in node else []
    elif isinstance(node, list):
        keys = list(range(len(node))) if head == "*" else []
        if head.isdigit() and int(head) < len(node):
            keys = [int(head)]
    else:
        return False
    if rest:
        return any([_drop(node[key], rest) for key in keys])
    for key in reversed(keys):
        if isinstance(node, dict):
            del node[key]
        else:
            node[key] = None  # (an item is blanked, not removed: the others keep their places)
    return bool(keys)
