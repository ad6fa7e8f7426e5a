"""Hosts a cassette ignores: background traffic that is not the agent's (tracing, telemetry).

A call to an ignored host is never recorded, only counted. Where the session
answers calls itself (playback, a frozen LLM, the sandbox) it is answered
here with an empty success, so it can never make a trial ``unsupported`` or
a sandbox violation; a plain recording lets it go out as it would without us.
"""

from __future__ import annotations

from collections.abc import Iterable
from urllib.parse import urlsplit

from ._schema import HttpResponse

DEFAULT_IGNORE_HOSTS: tuple[str, ...] = (
    "api.openai.com/v1/traces",  # openai-agents' trace exporter (on by default)
    "api.smith.langchain.com/runs",  # LangSmith tracing (langchain, langgraph); not its
    "api.smith.langchain.com/otel",  # prompts or datasets, which an agent may read
    "api.smith.langchain.com/info",  # (the client asks it before tracing)
    "eu.api.smith.langchain.com/runs",
    "eu.api.smith.langchain.com/otel",
    "eu.api.smith.langchain.com/info",
    "logfire-api.pydantic.dev",  # Logfire (pydantic-ai's instrumentation)
    "logfire-us.pydantic.dev",
    "logfire-eu.pydantic.dev",
)
"""Ignored unless told otherwise: the tracing endpoints of the official SDKs and frameworks."""

EMPTY_SUCCESS = HttpResponse(
    status=200,
    headers=[("content-type", "application/json"), ("content-length", "2")],
    chunks=[b"{}"],
)
"""What an ignored call gets when the session answers it."""


class IgnoredHosts:
    """Matches request URLs against ``host[:port]`` or ``host[:port]/path-prefix`` entries."""

    def __init__(self, entries: Iterable[str]) -> None:
        self.entries: tuple[str, ...] = tuple(dict.fromkeys(_normal(e) for e in entries if e))
        self._by_host: dict[str, list[tuple[int | None, str, str]]] = {}
        for entry in self.entries:
            where, slash, path = entry.partition("/")
            host, port = where, None
            head, colon, tail = where.rpartition(":")
            if colon and tail.isdigit() and (head.endswith("]") or ":" not in head):
                host, port = head, int(tail)  # not the colons of a bare IPv6 address
            self._by_host.setdefault(host.strip("[]"), []).append((port, slash + path, entry))

    @property
    def hosts(self) -> frozenset[str]:
        """The hosts named (any port, any path)."""
        return frozenset(self._by_host)

    def match(self, url: str) -> str | None:
        """Return the entry ``url`` falls under, or None (``host`` matches any port)."""
        if not self._by_host:
            return None
        try:
            parts = urlsplit(url)
            host = (parts.hostname or "").lower()
            port = parts.port
        except ValueError:
            return None
        for want, prefix, entry in self._by_host.get(host, ()):
            if want is not None and want != port:
                continue
            if not prefix or parts.path == prefix or parts.path.startswith(prefix + "/"):
                return entry
        return None


def _normal(entry: str) -> str:
    """``https://Host/path/`` and ``host/path`` name the same entry: ``host/path``."""
    entry = entry.strip()
    if "://" in entry:
        entry = entry.split("://", 1)[1]
    host, slash, path = entry.partition("/")
    return host.lower() + (slash + path.rstrip("/") if path.strip("/") else "")
