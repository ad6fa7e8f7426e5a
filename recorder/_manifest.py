"""What a recording captured, channel by channel: its capture manifest.

A cassette holds what its recording saw; what it did not see is as important to
whoever replays it (a verdict resting on a channel nobody recorded says little).
``manifest`` reads, from the events, the header and the footer, one line per
channel: the LLM, other HTTP, tools, MCP servers, the simulated user and the
world, each ``captured``, ``frozen`` (answered from a recording: a replay's
trial, as its pins say), ``ignored`` (only ignored calls were seen) or ``not
seen``, with counts, and, for tools the LLM asked for that no tool event holds,
how to wrap them (``unwrapped_tools``). Derived, not stored: every cassette has
one, whatever its format version.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Literal

from ._derive import llm_calls, unwrapped_tools
from ._llm import LlmCall
from ._schema import HttpEvent, ToolEvent, UserEvent

if TYPE_CHECKING:
    from ._reader import Cassette

MCP_PREFIX = "mcp:"
"""A third-party MCP server's protocol request is a tool event named ``mcp:SERVER:METHOD``."""


@dataclass(frozen=True)
class Captured:
    """One channel of a capture manifest.

    Attributes:
        channel: ``llm``, ``http``, ``tools``, ``mcp``, ``user`` or ``world``.
        state: ``captured``, ``frozen`` (answered from a recording, as replay's offline
            trials pin: ``pins.user["frozen"]``), ``ignored`` (calls seen and ignored,
            none kept) or ``not seen``.
        detail: Counts, or why nothing was seen and what to do.
    """

    channel: str
    state: Literal["captured", "frozen", "ignored", "not seen"]
    detail: str

    def describe(self) -> str:
        """One line: ``tools    captured: 5 calls (4 writes)``."""
        return f"{self.channel:<6} {self.state}: {self.detail}"


def manifest(cassette: Cassette) -> list[Captured]:
    """The cassette's capture manifest, one ``Captured`` per channel (see the module)."""
    events = cassette.events
    footer = cassette.summary()
    calls = llm_calls(events)
    llm_events = {id(event) for event, _ in calls}
    other_http = [e for e in events if isinstance(e, HttpEvent) and id(e) not in llm_events]
    tools = [e for e in events if isinstance(e, ToolEvent) and not e.name.startswith(MCP_PREFIX)]
    mcp = [e for e in events if isinstance(e, ToolEvent) and e.name.startswith(MCP_PREFIX)]
    turns = sum(isinstance(e, UserEvent) for e in events)
    ignored = footer.usage.ignored or {}
    out = [
        _counted("llm", len(calls), "call", _apis(calls))
        if calls
        else Captured("llm", "not seen", "no LLM call was recorded"),
    ]
    if other_http:
        out.append(_counted("http", len(other_http), "call", _ignored(ignored)))
    elif ignored:
        out.append(Captured("http", "ignored", _ignored(ignored).strip("; ")))
    else:
        out.append(Captured("http", "not seen", "no other HTTP call"))
    missing = unwrapped_tools(events)
    if tools:
        writes = sum(e.effect == "write" for e in tools)
        out.append(_counted("tools", len(tools), "call", f" ({writes} writes)" if writes else ""))
    else:
        out.append(Captured("tools", "not seen", missing or "no tool call"))
    servers = sorted({e.name.split(":")[1] for e in mcp if e.name.count(":") >= 2})
    if mcp:
        named = ", ".join(servers)
        out.append(_counted("mcp", len(mcp), "protocol request", f" to {named}"))
    else:
        out.append(Captured("mcp", "not seen", "no third-party MCP server"))
    if turns:
        out.append(_counted("user", turns, "turn", ""))
    else:
        out.append(Captured("user", "not seen", "no simulated user"))
    if cassette.header.fixture_hash is None:
        out.append(Captured("world", "not seen", "no world attached: no state diff to grade"))
    else:
        diff = footer.state_diff or {}
        rows = sum(len(changes) for changes in diff.values())
        out.append(Captured("world", "captured", f"{rows} rows changed in {len(diff)} tables"))
    frozen = ((cassette.header.pins.user or {}).get("frozen") or "").split(",")
    return [
        Captured(c.channel, "frozen", f"{c.detail}, answered from the recording")
        if c.state == "captured" and c.channel in frozen
        else c
        for c in out
    ]


def _counted(channel: str, n: int, what: str, more: str) -> Captured:
    return Captured(channel, "captured", f"{n} {what}{'s' * (n != 1)}{more}")


def _apis(calls: Sequence[tuple[HttpEvent, LlmCall]]) -> str:
    apis = sorted({call.api for _, call in calls})
    return f" ({', '.join(apis)})" if apis else ""


def _ignored(ignored: dict[str, int]) -> str:
    if not ignored:
        return ""
    listed = ", ".join(f"{entry}: {n}" for entry, n in sorted(ignored.items()))
    return f"; ignored {sum(ignored.values())} ({listed})"
