"""Benchmarks: cassette open time and size vs vcrpy YAML, and per-request record overhead.

Run ``python -m bench`` (or ``python -m bench --quick`` for a smoke check).
Each part also runs alone: ``python -m bench.cassette_open``,
``python -m bench.record_overhead``.
"""
