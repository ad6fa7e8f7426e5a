"""Offline tool answers: recorded calls served by (tool name, canonical arguments), strictly."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from recorder import (
    TOOL_MATCHERS,
    Cassette,
    FixtureUnsupported,
    RecordedAnswers,
    Redaction,
    Secrets,
    ToolEvent,
    ToolRequest,
)

from ..worlds import value_diff

TOOL_MATCH_ON = ("name", "arguments")
"""What a tool call is matched on unless told (names in ``recorder.TOOL_MATCHERS``)."""


class ToolPlayer:
    """Answers tool calls from a recorded cassette, strictly, in recorded order.

    A call is matched on ``match_on``, names from ``recorder.TOOL_MATCHERS``
    (by default the tool's name and its canonical arguments: sorted keys, 35
    and 35.0 equal). The policy is every replay source's: identical calls get
    the recorded calls in recorded order, each used once; a call past them, or
    one never recorded, raises ``FixtureUnsupported`` (naming the nearest
    recorded call and the differing arguments) and is kept in ``misses``.

    A live call's arguments are redacted and scrubbed as the recording's were
    (its tool paths, then ``secrets``) before they are matched.

    Args:
        cassette: The recording.
        match_on: Names of the matchers that make a call's key.
        secrets: What the trial scrubs (shared with its recording, which learns more).
    """

    def __init__(
        self,
        cassette: Cassette,
        *,
        match_on: Sequence[str] = TOOL_MATCH_ON,
        secrets: Secrets | None = None,
    ) -> None:
        self._redaction = Redaction.from_spec(cassette.header.redaction)
        self._secrets = secrets if secrets is not None else Secrets()
        self._calls = [e for e in cassette.events if isinstance(e, ToolEvent)]
        self.answers: RecordedAnswers[ToolRequest, ToolEvent] = RecordedAnswers(
            ((ToolRequest(e.name, e.args), e) for e in self._calls),
            match_on=match_on,
            matchers=TOOL_MATCHERS,
            describe=lambda c: _call_text(c.name, c.args),
            nearest=self._nearest,
        )
        """The recorded calls, by key; every replay source answers through one of these."""

    @property
    def misses(self) -> list[FixtureUnsupported]:
        """Every call this player could not answer, in order."""
        return self.answers.misses

    def answer(self, name: str, args: Mapping[str, Any]) -> ToolEvent:
        """Return the recorded call for (name, args), or raise ``FixtureUnsupported``."""
        args = self._redaction.redact_tool(name, "args", dict(args), self._secrets)
        return self.answers.answer(ToolRequest(name, self._secrets.scrub_value(args)))

    def _nearest(self, call: ToolRequest) -> str | None:
        name, args = call.name, dict(call.args)
        same = [c for c in self._calls if c.name == name] or self._calls
        if not same:
            return None
        best = min(same, key=lambda c: len(value_diff(c.args, args)))
        changes = value_diff(best.args, args) if best.name == name else ["a different tool"]
        if not changes and self.answers.match_on != TOOL_MATCH_ON:
            return self.answers.nearest_by_parts(call)  # a part of a custom matcher differs
        changes = changes or ["argument types (e.g. a number given as text)"]
        return f"{_call_text(best.name, best.args)}, differing in {'; '.join(changes)}"


class ReplayedToolError(Exception):
    """The recorded tool call raised; offline replay raises the same again.

    Its text is the recorded ``Type: message``; ``type`` and ``message`` are the parts.
    """

    def __init__(self, type: str, message: str) -> None:
        super().__init__(f"{type}: {message}")
        self.type, self.message = type, message
        self.replayed = (type, message)
        """Recorded as the recorded error again (``recorder.error_info``)."""


def _call_text(name: str, args: Mapping[str, Any]) -> str:
    return f"{name}({', '.join(f'{k}={v!r}' for k, v in args.items())})"
