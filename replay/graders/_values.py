"""What an assertion is checked against (``Context``), what it gives (``Check``), and its values.

``Approx`` is a number with a tolerance; ``WorldRef`` a name an assertion gives the
world, known without evaluating it; the private classes are the values an
assertion's names evaluate to (a table, rows, the diff and its tables).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any

from ..worlds import StateDiff
from ._world_view import WorldView


@dataclass(frozen=True, slots=True)
class Context:
    """What an assertion is checked against."""

    world: WorldView
    diff: StateDiff
    answer: str | None = None
    allowed_tables: frozenset[str] | None = None
    """Tables the case may change; None: no_side_effects cannot be checked."""


@dataclass(frozen=True, slots=True)
class Check:
    """The outcome of one assertion."""

    source: str
    passed: bool
    expected: str | None = None
    actual: str | None = None
    message: str = ""

    def __str__(self) -> str:
        if self.passed:
            return f"ok: {self.source}"
        detail = self.message or f"expected {self.expected}, actual {self.actual}"
        return f"failed: {self.source}: {detail}"


@dataclass(frozen=True, slots=True)
class Approx:
    """A number with a tolerance: ``approx(35.0, abs=0.01)`` or ``approx(35, rel=1e-3)``."""

    value: float
    abs: float = 0.0
    rel: float = 1e-9

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, (int, float)) or isinstance(other, bool):
            return False
        return math.isclose(other, self.value, rel_tol=self.rel, abs_tol=self.abs)

    def __hash__(self) -> int:
        return hash(self.value)

    def __repr__(self) -> str:
        tol = f"abs={self.abs}" if self.abs else f"rel={self.rel}"
        return f"approx({self.value}, {tol})"


@dataclass(frozen=True, slots=True)
class _Table:
    name: str


@dataclass(frozen=True, slots=True)
class _Rows:
    table: str
    rows: list[dict[str, Any]] = field(default_factory=list)

    def __bool__(self) -> bool:
        return bool(self.rows)


@dataclass(frozen=True, slots=True)
class _DiffTable:
    name: str


class _DiffRoot:
    pass


@dataclass(frozen=True, slots=True)
class WorldRef:
    """A name an assertion gives the world, known without evaluating it.

    ``orders[4812].status`` names table ``orders``, indexed by one value
    (``key_parts``), and its column ``status``; ``refunds.count(order_id=1)``
    names column ``order_id`` as a filter; ``diff.refunds.inserted`` names
    table ``refunds``. A case checks them against its fixture's schema.
    """

    table: str
    column: str | None = None
    """A column (or document field) of ``table``; None: the table itself."""
    key_parts: int | None = None
    """Values a ``table[key]`` lookup gives for the primary key; None: no lookup."""
    filter: bool = False
    """``column`` is a ``count``/``where`` filter (which may also be ``rowid``)."""
