"""Composing row changes into one net delta per table and key.

A change is (before, after) for one row: ``before`` is None for an insert,
``after`` None for a delete. Composing two changes to the same row keeps the
earliest known value of each field as "before" and the latest as "after", so
the same code folds raw trigger rows (full rows) and per-call deltas (changed
fields only) into the net change of a trial.
"""

from __future__ import annotations

from typing import Any

from ._schema import RowChange, Scalar, WorldDelta

Row = dict[str, Any]
_Missing = object()


class DeltaBuilder:
    """Accumulates row changes in order and builds the net ``WorldDelta``."""

    def __init__(self) -> None:
        # table -> key -> [before, after]; both None marks "inserted then deleted".
        self._rows: dict[str, dict[tuple[Scalar, ...], list[Row | None]]] = {}

    def __bool__(self) -> bool:
        return any(self._rows.values())

    def add(
        self, table: str, key: tuple[Scalar, ...], before: Row | None, after: Row | None
    ) -> None:
        """Fold one change to one row into the accumulated delta."""
        rows = self._rows.setdefault(table, {})
        prior = rows.get(key)
        if prior is None:
            rows[key] = [before, after]
            return
        b1, a1 = prior
        if b1 is not None and before is not None:
            b1 = {**before, **b1}  # the earlier value of a field wins
        if after is None:
            a1 = None
        elif a1 is None:
            a1 = after  # re-inserted after a delete
        else:
            a1 = {**a1, **after}
        rows[key] = [b1, a1]

    def add_delta(self, delta: WorldDelta) -> None:
        """Fold a whole delta (e.g. one tool call's) into the accumulated one."""
        for table, changes in delta.items():
            for change in changes:
                self.add(table, tuple(change.key), change.before, change.after)

    def build(self) -> WorldDelta:
        """Return the net delta: updates keep only the fields whose value changed."""
        out: WorldDelta = {}
        for table, rows in self._rows.items():
            changes = []
            for key, (before, after) in rows.items():
                if before is not None and after is not None:
                    fields = [f for f in after if before.get(f, _Missing) != after[f]]
                    if not fields:
                        continue
                    before = {f: before[f] for f in fields if f in before}
                    after = {f: after[f] for f in fields}
                elif before is None and after is None:
                    continue
                changes.append(RowChange(key=list(key), before=before, after=after))
            if changes:
                out[table] = changes
        return out


def net_delta(deltas: list[WorldDelta]) -> WorldDelta:
    """Return the net effect of several deltas applied in order."""
    builder = DeltaBuilder()
    for delta in deltas:
        builder.add_delta(delta)
    return builder.build()
