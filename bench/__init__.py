"""Benchmarks, each against the incumbent measured in the same run.

Cassette open time and size vs vcrpy YAML; per-request record overhead vs
vcrpy; world reset vs a file copy; state diff vs deepdiff of snapshots.
Run ``python -m bench`` (or ``python -m bench --quick`` for a smoke check).
Each part also runs alone: ``python -m bench.cassette_open``,
``python -m bench.record_overhead``, ``python -m bench.world_reset``,
``python -m bench.state_diff``.
"""
