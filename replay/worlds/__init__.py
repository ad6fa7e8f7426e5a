"""Worlds: SQLite fixtures and their per-trial copies, state diffs, document worlds.

Private: use what ``replay`` exports.
"""
