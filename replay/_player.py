"""Offline tool answers: recorded calls served by (tool name, canonical arguments), strictly."""

from __future__ import annotations

import json
from collections import deque
from collections.abc import Mapping
from typing import Any

from recorder import Cassette, FixtureUnsupported, ToolEvent

from ._diff import canonical_numbers, value_diff


class ToolPlayer:
    """Answers tool calls from a recorded cassette, strictly, in recorded order."""

    def __init__(self, cassette: Cassette) -> None:
        self._calls = [e for e in cassette.events if isinstance(e, ToolEvent)]
        self._queue: dict[tuple[str, str], deque[ToolEvent]] = {}
        for event in self._calls:
            self._queue.setdefault(_key(event.name, event.args), deque()).append(event)
        self.misses: list[FixtureUnsupported] = []

    def answer(self, name: str, args: Mapping[str, Any]) -> ToolEvent:
        """Return the recorded call for (name, args), or raise ``FixtureUnsupported``."""
        queue = self._queue.get(_key(name, args))
        if queue:
            return queue.popleft()
        miss = FixtureUnsupported(request=_call_text(name, args), nearest=self._nearest(name, args))
        self.misses.append(miss)
        raise miss

    def _nearest(self, name: str, args: Mapping[str, Any]) -> str | None:
        same = [c for c in self._calls if c.name == name] or self._calls
        if not same:
            return None
        best = min(same, key=lambda c: len(value_diff(c.args, dict(args))))
        changes = value_diff(best.args, dict(args)) if best.name == name else ["a different tool"]
        changes = changes or ["argument types (e.g. a number given as text)"]
        return f"{_call_text(best.name, best.args)}, differing in {'; '.join(changes)}"


class ReplayedToolError(Exception):
    """The recorded tool call raised; offline replay raises the same again."""


def _key(name: str, args: Mapping[str, Any]) -> tuple[str, str]:
    canonical = json.dumps(
        canonical_numbers(dict(args)), sort_keys=True, default=str, separators=(",", ":")
    )
    return name, canonical


def _call_text(name: str, args: Mapping[str, Any]) -> str:
    return f"{name}({', '.join(f'{k}={v!r}' for k, v in args.items())})"
