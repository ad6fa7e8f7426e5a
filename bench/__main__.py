"""``python -m bench [--quick]``: every benchmark, one table each, then the targets.

Full run: 10,000-call cassettes and recordings filled to 10,000 requests
(a few minutes, most of it vcrpy). ``--quick``: 1,000 calls, fewer
repetitions and fill levels, for a smoke check in well under 20 seconds.
Everything is written to a temporary directory.
"""

from __future__ import annotations

import argparse
import os
import platform
import time
from importlib.metadata import version

from . import cassette_open, record_overhead
from ._report import ms, secs


def environment() -> str:
    """One line naming what the numbers were measured on."""
    libs = ", ".join(
        f"{name} {version(name)}" for name in ("vcrpy", "PyYAML", "httpx", "msgpack", "pydantic")
    )
    return (
        f"Python {platform.python_version()} on {platform.machine()}, {os.cpu_count()} CPUs; {libs}"
    )


def main(argv: list[str] | None = None) -> None:
    """Run both benchmarks and print their tables and a summary of the targets."""
    parser = argparse.ArgumentParser(prog="python -m bench", description=__doc__)
    parser.add_argument("--quick", action="store_true", help="small sizes: a smoke check")
    args = parser.parse_args(argv)
    t0 = time.perf_counter()
    print(f"agent-replay benchmarks{' (--quick)' if args.quick else ''}")
    print(environment())
    print()
    opened = cassette_open.run(quick=args.quick)
    print(cassette_open.report(opened), flush=True)
    print()
    overhead = record_overhead.run(quick=args.quick)
    print(record_overhead.report(overhead))
    print()
    worst = max(p.overhead for p in overhead.ours.points)
    checks = [
        (
            f"open a {opened.n:,}-call cassette <= {cassette_open.OPEN_TARGET_S} s",
            secs(opened.ours_open_s),
            opened.open_ok,
        ),
        (
            f"cassette >= {cassette_open.SIZE_TARGET_X:.0f}x smaller than vcrpy YAML",
            f"{opened.size_ratio:.1f}x",
            opened.size_ok,
        ),
        (
            "record overhead <= 0.2 ms per request, at every fill level",
            f"worst {ms(worst)}",
            overhead.ok,
        ),
    ]
    print("Targets")
    for what, got, ok in checks:
        print(f"  [{'ok' if ok else 'MISSED'}] {what}: {got}")
    print(f"\nwall time: {time.perf_counter() - t0:.1f} s")


if __name__ == "__main__":
    main()
