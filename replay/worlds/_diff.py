"""StateDiff: what a trial changed in the world, one type whatever produced it.

Built from world deltas (``recorder.WorldDelta``): those in a cassette
(review), those of the recorded calls an agent repeated (offline), or those
real tools produced (sandbox). It costs what the trial changed, never a scan
of the tables. The only deepdiff use (imported on first use): nested JSON values in an updated
field are compared with it, so a report can say *which part* of a JSON
column changed.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from recorder import WorldDelta, net_delta

Key = tuple[Any, ...]
Row = dict[str, Any]


@dataclass(frozen=True, slots=True)
class RowUpdate:
    """One updated row: the fields that changed, before and after."""

    key: Key
    before: Row
    after: Row

    @property
    def fields(self) -> tuple[str, ...]:
        """Names of the changed fields."""
        return tuple(self.after)

    def nested_changes(self, name: str) -> list[str]:
        """Paths inside a JSON field that changed (``root['a'][0]`` style), if it holds JSON."""
        old, new = _as_json(self.before.get(name)), _as_json(self.after.get(name))
        if not isinstance(old, (dict, list)) or not isinstance(new, (dict, list)):
            return []
        diff = _deep_diff(old, new)
        return sorted({item.path() for items in diff.values() for item in items})


@dataclass(frozen=True, slots=True)
class TableDiff:
    """Rows inserted, deleted and updated in one table, by primary key."""

    inserted: dict[Key, Row] = field(default_factory=dict)
    deleted: dict[Key, Row] = field(default_factory=dict)
    updated: dict[Key, RowUpdate] = field(default_factory=dict)

    def __len__(self) -> int:
        return len(self.inserted) + len(self.deleted) + len(self.updated)


@dataclass(frozen=True, slots=True)
class StateDiff:
    """What a trial changed, per table. Tables with no change are absent."""

    tables: Mapping[str, TableDiff] = field(default_factory=dict)

    @classmethod
    def from_delta(cls, delta: WorldDelta) -> StateDiff:
        """Build the diff of one (net) world delta."""
        tables: dict[str, TableDiff] = {}
        for name, changes in delta.items():
            table = TableDiff()
            for change in changes:
                key = tuple(change.key)
                if change.before is None and change.after is not None:
                    table.inserted[key] = dict(change.after)
                elif change.after is None and change.before is not None:
                    table.deleted[key] = dict(change.before)
                elif change.before is not None and change.after is not None:
                    table.updated[key] = RowUpdate(key, dict(change.before), dict(change.after))
            if len(table):
                tables[name] = table
        return cls(tables)

    @classmethod
    def from_deltas(cls, deltas: Iterable[WorldDelta]) -> StateDiff:
        """Build the net diff of deltas applied in order (e.g. one per tool call)."""
        return cls.from_delta(net_delta(list(deltas)))

    def __bool__(self) -> bool:
        return bool(self.tables)

    def table(self, name: str) -> TableDiff:
        """Return one table's diff (empty if the table did not change)."""
        return self.tables.get(name) or TableDiff()

    def touched(self) -> set[str]:
        """Names of the tables that changed."""
        return set(self.tables)

    def to_json(self) -> dict[str, Any]:
        """Return the diff as JSON-ready data."""
        return {
            name: {
                "inserted": [{"key": list(k), "row": r} for k, r in t.inserted.items()],
                "deleted": [{"key": list(k), "row": r} for k, r in t.deleted.items()],
                "updated": [
                    {"key": list(k), "before": u.before, "after": u.after}
                    for k, u in t.updated.items()
                ],
            }
            for name, t in self.tables.items()
        }


def _as_json(value: Any) -> Any:
    if isinstance(value, str) and value[:1] in ("{", "["):
        try:
            return json.loads(value)
        except (ValueError, RecursionError):
            return value
    return value


def _deep_diff(old: Any, new: Any) -> Any:
    # deepdiff imports pandas and numpy (~0.3 s): loaded by the first diff that needs it,
    # not by every process that imports a world (a walled agent's child, the CLI).
    from deepdiff import DeepDiff

    return DeepDiff(old, new, ignore_numeric_type_changes=True, view="tree")


def value_diff(old: Any, new: Any) -> list[str]:
    """Describe how ``new`` differs from ``old``, one line per changed path.

    Numbers of equal value are equal (``35`` and ``35.0``).
    """
    diff = _deep_diff(old, new)
    lines = []
    for kind, items in sorted(diff.items()):
        for item in items:
            path = item.path(root="")
            if kind in ("values_changed", "type_changes"):
                lines.append(f"{path}: {item.t1!r} -> {item.t2!r}")
            elif kind.endswith("_added"):
                lines.append(f"{path}: added {item.t2!r}")
            elif kind.endswith("_removed"):
                lines.append(f"{path}: removed (was {item.t1!r})")
            else:
                lines.append(f"{path}: {kind}")
    return sorted(lines)


def canonical_numbers(value: Any) -> Any:
    """Integer-valued floats as ints, so 35 and 35.0 are the same argument."""
    if isinstance(value, float) and value.is_integer():
        return int(value)
    if isinstance(value, dict):
        return {k: canonical_numbers(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [canonical_numbers(v) for v in value]
    return value
