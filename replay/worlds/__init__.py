"""Worlds: SQLite fixtures and their per-trial copies, state diffs, document worlds.

Private: use what ``replay`` exports.
"""

from ._diff import RowUpdate, StateDiff, TableDiff, canonical_numbers, value_diff
from ._documents import Documents, decode_row, encode
from ._world import Fixture, TrialConnection, World, apply_delta, load_fixture, primary_keys, ship

__all__ = [
    "Documents",
    "Fixture",
    "RowUpdate",
    "StateDiff",
    "TableDiff",
    "TrialConnection",
    "World",
    "apply_delta",
    "canonical_numbers",
    "decode_row",
    "encode",
    "load_fixture",
    "primary_keys",
    "ship",
    "value_diff",
]
