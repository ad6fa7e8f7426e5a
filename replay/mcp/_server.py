"""A third-party MCP server as a case's agent uses it: started by command, or reached by URL."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

from recorder import ConfigError

from ._upstream import MESSAGE_BYTES

CALL_TIMEOUT_S = 60.0
"""Seconds a request to the real server may take (``McpServer.timeout``) before it has failed."""


@dataclass(frozen=True)
class McpServer:
    """A third-party MCP server a case's agent uses.

    Attributes:
        command: The command that starts it (stdio); ``{world}`` in it is replaced
            by the path of the trial's world as a SQLite file.
        url: Or the streamable-HTTP endpoint where it runs already.
        env: Environment variables for the command (``{world}`` replaced too),
            added to the few it inherits (``PATH``, ``HOME``, the locale: never a secret).
        timeout: Seconds one request may take before the server has failed.
        max_message_bytes: Bytes one message of a started server's may hold: a longer
            line ends the call under way at once, as the server's failure.
    """

    command: Sequence[str] = ()
    url: str | None = None
    env: Mapping[str, str] = field(default_factory=dict)
    timeout: float = CALL_TIMEOUT_S
    max_message_bytes: int = MESSAGE_BYTES

    def __post_init__(self) -> None:
        if bool(self.command) == bool(self.url):
            raise ConfigError("an MCP server is a command or a url (one of them)")

    @property
    def takes_world(self) -> bool:
        """Whether the server is given the trial's world as a file."""
        return any("{world}" in part for part in (*self.command, *self.env.values()))
