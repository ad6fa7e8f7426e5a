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
``--only NAME[,NAME]``: those benchmarks alone (``BENCHES``: ``bench.check`` runs a
suspect's again). Everything is written to a temporary directory.
"""

from __future__ import annotations

import argparse
import os
import platform
import sqlite3
import time
from collections.abc import Callable
from dataclasses import dataclass
from importlib.metadata import version
from pathlib import Path
from typing import Any

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


@dataclass(frozen=True)
class Bench:
    """One benchmark: how it runs and reports, and which targets' figures it gives."""

    name: str
    """Its module, and its name for ``--only``."""
    run: Callable[[bool, bool], Any]
    """``(quick, smoke)``: its result."""
    report: Callable[[Any], str]
    figures: str | None
    """Its result's keyword in ``targets.figures`` (None: no figure of its own)."""
    title: str = ""
    """What a skip says it was."""
    available: Callable[[], bool] = lambda: True
    missing: str = ""
    """Why it is skipped where ``available`` says no."""


BENCHES = (
    Bench("cassette_open", lambda q, s: cassette_open.run(quick=q, smoke=s), cassette_open.report,
          "opened"),
    Bench("record_overhead", lambda q, s: record_overhead.run(quick=q), record_overhead.report,
          "overhead"),
    Bench("record_clients", lambda q, s: record_clients.run(quick=q), record_clients.report,
          "clients"),
    Bench("world_reset", lambda q, s: world_reset.run(quick=q), world_reset.report, "reset"),
    Bench("state_diff", lambda q, s: state_diff.run(quick=q, smoke=s), state_diff.report, "diff"),
    Bench("executors", lambda q, s: executors.run(quick=q, smoke=s), executors.report, "spread"),
    Bench("mcp_proxy", lambda q, s: mcp_proxy.run(quick=q, smoke=s), mcp_proxy.report, "proxied",
          "mcp proxy", mcp_proxy.available, "mcp is not installed"),
    Bench("isolation", lambda q, s: isolation.run(quick=q, smoke=s), isolation.report, "walled",
          "isolation", isolation.available, "bubblewrap does not run"),
    Bench("tau2_gold", lambda q, s: tau2_gold.run(quick=q, smoke=s), tau2_gold.report, "gold",
          "tau2 gold pass", tau2_gold.available, "tau2 is not installed"),
    Bench("reports", lambda q, s: reports.run(quick=q, smoke=s), reports.report, "read"),
    Bench("stats", lambda q, s: stats.run(quick=q, smoke=s), stats.report, None),
)  # fmt: skip
"""Every benchmark, in the order they run."""


def environment() -> str:
    """One line naming what the numbers were measured on."""
    names = ("vcrpy", "PyYAML", "httpx", "msgpack", "pydantic", "deepdiff")
    libs = ", ".join(f"{name} {version(name)}" for name in names)
    return (
        f"Python {platform.python_version()} on {platform.machine()}, {os.cpu_count()} CPUs; "
        f"SQLite {sqlite3.sqlite_version}; {libs}"
    )


def main(argv: list[str] | None = None) -> None:
    """Run the benchmarks and print their tables and a summary of the targets."""
    parser = argparse.ArgumentParser(prog="python -m bench", description=__doc__)
    parser.add_argument("--quick", action="store_true", help="small sizes: a smoke check")
    parser.add_argument(
        "--smoke",
        action="store_true",
        help="smaller than --quick (fewer calls, rows, tasks and trials, one agent, no Ray "
        "or Dask): that it runs",
    )
    parser.add_argument(
        "--only",
        metavar="NAMES",
        help=f"these benchmarks alone, comma-separated: {', '.join(b.name for b in BENCHES)}",
    )
    parser.add_argument(
        "--json", type=Path, metavar="FILE", help="also write the figures there (bench.check)"
    )
    args = parser.parse_args(argv)
    args.quick = args.quick or args.smoke
    names = [b.name for b in BENCHES]
    only = set(args.only.split(",")) if args.only else set(names)
    if only - set(names):
        parser.error(f"no benchmark {', '.join(sorted(only - set(names)))}; there are {names}")
    t0 = time.perf_counter()
    size = " (--smoke)" if args.smoke else " (--quick)" if args.quick else ""
    print(f"agent-replay benchmarks{size}")
    print(environment())
    print()
    found: list[targets.Figure] = []
    benches: dict[str, str] = {}
    stats_held: bool | None = None
    for bench in (b for b in BENCHES if b.name in only):
        if not bench.available():
            print(f"{bench.title}: skipped ({bench.missing})\n")
            continue
        result = bench.run(args.quick, args.smoke)
        print(bench.report(result), flush=True)
        print()
        if bench.figures is not None:
            mine = targets.figures(**{bench.figures: result})
            benches.update((f.key, bench.name) for f in mine)
            found += mine
        if bench.name == "stats":
            stats_held = result.ok
    print("Targets (ratio: the figure against its target; at most 1.00 is met)")
    print("\n".join(targets.lines(found, stats_held, everything=not args.only)))
    if args.json:
        targets.write(args.json, found, benches)
    print(f"\nwall time: {time.perf_counter() - t0:.1f} s")


if __name__ == "__main__":
    main()
