"""Results: the store, metrics, report, gate, suite health, comparisons, judge calibration.

Private: use what ``replay`` exports.
"""
