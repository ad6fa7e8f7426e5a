"""``python -m bench [--quick]``: every benchmark, one table each, then the targets.

Full run: 10,000-call cassettes and recordings filled to 10,000 requests
(a few minutes, most of it vcrpy), world resets at fixtures up to 1 GB and
state diffs of tables up to 1M rows (DeepDiff stopped after 60 s).
``--quick``: 1,000 calls, a 10 MB fixture, a 10,000-row table, 320
trials per executor, 5 tau2 tasks, 200 requests per HTTP client, fewer
repetitions and fill levels, 400 simulated suites per size, reports of a
10,000-trial run (100,000 in the full run): a smoke check
in about a minute. Ray, Dask and
the tau2-bench gold pass run when they are installed.
Everything is written to a temporary directory.
"""

from __future__ import annotations

import argparse
import os
import platform
import sqlite3
import time
from importlib.metadata import version
from pathlib import Path

from . import (
    cassette_open,
    executors,
    isolation,
    mcp_proxy,
    record_clients,
    record_overhead,
    reports,
    state_diff,
    stats,
    targets,
    tau2_gold,
    world_reset,
)


def environment() -> str:
    """One line naming what the numbers were measured on."""
    names = ("vcrpy", "PyYAML", "httpx", "msgpack", "pydantic", "deepdiff")
    libs = ", ".join(f"{name} {version(name)}" for name in names)
    return (
        f"Python {platform.python_version()} on {platform.machine()}, {os.cpu_count()} CPUs; "
        f"SQLite {sqlite3.sqlite_version}; {libs}"
    )


def main(argv: list[str] | None = None) -> None:
    """Run every benchmark and print their tables and a summary of the targets."""
    parser = argparse.ArgumentParser(prog="python -m bench", description=__doc__)
    parser.add_argument("--quick", action="store_true", help="small sizes: a smoke check")
    parser.add_argument(
        "--smoke",
        action="store_true",
        help="--quick, with fewer executor trials, one agent, no Ray or Dask: that it runs",
    )
    parser.add_argument(
        "--json", type=Path, metavar="FILE", help="also write the figures there (bench.check)"
    )
    args = parser.parse_args(argv)
    args.quick = args.quick or args.smoke
    t0 = time.perf_counter()
    size = " (--smoke)" if args.smoke else " (--quick)" if args.quick else ""
    print(f"agent-replay benchmarks{size}")
    print(environment())
    print()
    opened = cassette_open.run(quick=args.quick)
    print(cassette_open.report(opened), flush=True)
    print()
    overhead = record_overhead.run(quick=args.quick)
    print(record_overhead.report(overhead), flush=True)
    print()
    clients = record_clients.run(quick=args.quick)
    print(record_clients.report(clients), flush=True)
    print()
    reset = world_reset.run(quick=args.quick)
    print(world_reset.report(reset), flush=True)
    print()
    diff = state_diff.run(quick=args.quick)
    print(state_diff.report(diff))
    print()
    spread = executors.run(quick=args.quick, smoke=args.smoke)
    print(executors.report(spread), flush=True)
    print()
    proxied = mcp_proxy.run(quick=args.quick, smoke=args.smoke) if mcp_proxy.available() else None
    print(mcp_proxy.report(proxied) if proxied else "mcp proxy: skipped (mcp is not installed)")
    print()
    walled = isolation.run(quick=args.quick) if isolation.available() else None
    print(isolation.report(walled) if walled else "isolation: skipped (bubblewrap does not run)")
    print()
    gold = tau2_gold.run(quick=args.quick) if tau2_gold.available() else None
    print(tau2_gold.report(gold) if gold else "tau2 gold pass: skipped (tau2 is not installed)")
    print()
    read = reports.run(quick=args.quick, smoke=args.smoke)
    print(reports.report(read), flush=True)
    print()
    simulated = stats.run(quick=args.quick, smoke=args.smoke)
    print(stats.report(simulated), flush=True)
    print()
    found = targets.figures(
        opened=opened, overhead=overhead, clients=clients, reset=reset, diff=diff,
        spread=spread, proxied=proxied, walled=walled, gold=gold, read=read,
    )  # fmt: skip
    print("Targets (ratio: the figure against its target; at most 1.00 is met)")
    print("\n".join(targets.lines(found, simulated.ok)))
    if args.json:
        targets.write(args.json, found)
    print(f"\nwall time: {time.perf_counter() - t0:.1f} s")


if __name__ == "__main__":
    main()
