"""Runs: the run's spec, the driver loop, the unit of work, the executor backends, checking cases.

Private: use what ``replay`` exports.
"""
