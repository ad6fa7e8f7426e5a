"""The targets every benchmark is held to, and each figure's ratio to its target.

A ``Figure`` is one number a benchmark measured (its ``key`` stable across commits, for
``bench.check``), the target it is held to, and which way is better. Its ``ratio`` is
how far from the target it is: at most 1 is met (a time of 0.3 s against 0.25 s is
1.20; an efficiency of 76% against 93% is 1.22). Targets not yet measured by any
benchmark are listed as such (``UNMEASURED``), not left out.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any, Literal

from . import (
    cassette_open,
    executors,
    isolation,
    mcp_proxy,
    record_clients,
    record_overhead,
    reports,
    state_diff,
    tau2_gold,
    world_reset,
)
from ._report import mb, ms, secs


@dataclass(frozen=True)
class Figure:
    """One measured number, its target, and which way is better."""

    key: str
    what: str
    """The target in words."""
    value: float
    target: float
    better: Literal["lower", "higher"]
    shown: str
    """The value as people read it."""

    @property
    def ratio(self) -> float:
        """How far from the target (at most 1: met): value/target, or target/value."""
        if self.better == "lower":
            return self.value / self.target
        return self.target / self.value if self.value else float("inf")

    @property
    def met(self) -> bool:
        """Whether the target is met."""
        return self.ratio <= 1.0


UNMEASURED: tuple[str, ...] = ()
"""Targets of the table no benchmark measures yet."""

LOAD = "load a 1 GB fixture <= 3 s and <= 1.5 GB peak"
"""Measured at 1 GB only (``world_reset``'s full run): not measured by a quick run."""


def _worst_points(points: Sequence[Any]) -> float:
    return max(p.overhead for p in points)


def figures(
    *,
    opened: Any | None = None,
    overhead: Any | None = None,
    clients: Any | None = None,
    reset: Any | None = None,
    diff: Any | None = None,
    spread: Sequence[Any] | None = None,
    proxied: Sequence[Any] | None = None,
    walled: Any | None = None,
    gold: Any | None = None,
    read: Any | None = None,
) -> list[Figure]:
    """Every figure with a target, from the benchmarks' results (None: not run here)."""
    out: list[Figure] = []
    if opened is not None:
        per_call = opened.ours_open_s / opened.n
        out.append(
            Figure(
                "open_per_call_s",
                "open a cassette <= 25 us per call (0.25 s for 10,000)",
                per_call,
                cassette_open.OPEN_TARGET_PER_CALL_S,
                "lower",
                f"{per_call * 1e6:.1f} us per call ({secs(opened.ours_open_s)} for {opened.n:,})",
            )
        )
    if overhead is not None:
        worst = _worst_points(overhead.ours.points)
        out.append(
            Figure(
                "record_overhead_s",
                "record overhead <= 0.15 ms per request, at every fill level",
                worst,
                record_overhead.TARGET_S,
                "lower",
                f"worst {ms(worst)}",
            )
        )
    if clients is not None:
        out.append(
            Figure(
                "record_client_s",
                "record overhead <= 0.15 ms per request, every client",
                clients.worst.overhead,
                record_clients.TARGET_S,
                "lower",
                f"worst {clients.worst.name} {ms(clients.worst.overhead)}",
            )
        )
    if reset is not None:
        out.append(
            Figure(
                "world_reset_s",
                "world reset <= 1 ms, at every fixture size",
                reset.worst,
                world_reset.TARGET_S,
                "lower",
                f"worst median {secs(reset.worst)}",
            )
        )
        out += _load(reset)
    if diff is not None:
        out.append(
            Figure(
                "state_diff_s",
                "state diff of 10 changed rows <= 1 ms, at every table size",
                diff.worst,
                state_diff.TARGET_S,
                "lower",
                f"worst median {secs(diff.worst)}",
            )
        )
    if spread is not None:
        out += _executors(spread)
    if read is not None:
        out += _reports(read)
    if proxied:
        worst = _worst_points(proxied)
        out.append(
            Figure(
                "mcp_proxy_s",
                "MCP proxy adds <= 0.5 ms per call, at every number of calls",
                worst,
                mcp_proxy.TARGET_MS / 1000,
                "lower",
                f"worst {ms(worst)}",
            )
        )
    if walled is not None:
        out.append(
            Figure(
                "walled_start_s",
                "a walled trial starts within 50 ms of an in-process one",
                walled.added,
                isolation.TARGET_MS / 1000,
                "lower",
                f"{ms(walled.added)} more",
            )
        )
    if gold is not None:
        out.append(
            Figure(
                "tau2_gold_x",
                f"tau2 airline gold pass ({gold.tasks} tasks) >= 15x faster than tau2's check",
                gold.ratio,
                tau2_gold.TARGET_X,
                "higher",
                f"{gold.ratio:.1f}x",
            )
        )
    return out


def _load(reset: Any) -> list[Figure]:
    """``Fixture.load`` at 1 GB: its time and the peak memory when it returns (if measured)."""
    at = reset.load
    if at is None:
        return []
    size = world_reset.label(at.target)
    out = [
        Figure(
            "fixture_load_s",
            f"load a {size} fixture <= {world_reset.LOAD_TARGET_S:g} s",
            at.load_s,
            world_reset.LOAD_TARGET_S,
            "lower",
            secs(at.load_s),
        )
    ]
    if at.load_rss:  # (0: this system cannot say)
        out.append(
            Figure(
                "fixture_load_rss",
                f"load a {size} fixture <= {world_reset.LOAD_TARGET_RSS / 1e9:g} GB peak",
                at.load_rss,
                world_reset.LOAD_TARGET_RSS,
                "lower",
                mb(at.load_rss),
            )
        )
    return out


def _reports(result: Any) -> list[Figure]:
    """The slowest of report / report --json / gate / report --html, its largest RSS, the page."""
    slow, big = reports.worst(result)
    size = f"a {result.cases * result.trials:,}-trial run"
    out = [
        Figure(
            "reports_s",
            f"report / report --json / gate / report --html of {size} <= 2 s each",
            slow.wall_s,
            reports.TARGET_S,
            "lower",
            f"worst {slow.name} {secs(slow.wall_s)}",
        ),
        Figure(
            "reports_rss",
            f"report / report --json / gate / report --html of {size} <= 200 MB each",
            big.rss,
            reports.TARGET_RSS,
            "lower",
            f"worst {big.name} {mb(big.rss)}",
        ),
    ]
    page = reports.page(result)
    if page is not None:
        out.append(
            Figure(
                "report_page_bytes",
                f"report --html of {size}: its first page <= 5 MB",
                page,
                reports.TARGET_PAGE,
                "lower",
                mb(page),
            )
        )
    return out


def _executors(points: Sequence[Any]) -> list[Figure]:
    """Local and walled runs against the ideal, and against the bare agent."""
    bare = {p.agent: p for p in points if p.executor == "bare"}
    out = []
    walls = 0
    for p in points:
        if p.executor == "local" and p.agent == "agent":
            out.append(
                Figure(
                    "local_efficiency",
                    f"local executor >= 93% of the ideal ({p.trials:,} trials, "
                    f"{p.concurrency} in flight)",
                    p.efficiency,
                    executors.EFFICIENCY_TARGET,
                    "higher",
                    f"{p.efficiency:.0%} of the ideal",
                )
            )
        if p.executor == "local" and p.agent in bare and p.trials == bare[p.agent].trials:
            limit = executors.BARE_TARGET.get(p.agent, 1.05)
            times = p.wall_s / bare[p.agent].wall_s
            out.append(
                Figure(
                    f"local_vs_bare_{p.agent}",
                    f"local executor, {p.agent}, <= {limit:.2f}x the bare agent",
                    times,
                    limit,
                    "lower",
                    f"{times:.2f}x",
                )
            )
        if p.executor == "local, walled":
            walls += 1  # (the first: the target's; more in flight after it, their own keys)
            out.append(
                Figure(
                    "walled_efficiency" if walls == 1 else f"walled_efficiency_{p.concurrency}",
                    f"walled trials >= 80% of the ideal ({p.trials:,} trials, "
                    f"{p.concurrency} in flight)",
                    p.efficiency,
                    executors.WALLED_TARGET,
                    "higher",
                    f"{p.efficiency:.0%} of the ideal",
                )
            )
    return out


def lines(found: Sequence[Figure], stats_held: bool | None, everything: bool = True) -> list[str]:
    """The targets as printed: met or missed, the figure, its ratio to the target.

    ``stats_held``: None when the simulations did not run. ``everything``: every
    benchmark ran (else the targets none measured are not listed).
    """
    out = [
        f"  [{'ok' if f.met else 'MISSED'}] {f.what}: {f.shown} ({f.ratio:.2f} of the target)"
        for f in found
    ]
    if stats_held is not None:
        out.append(
            f"  [{'ok' if stats_held else 'MISSED'}] 95% intervals cover in 93-97% of simulated "
            "suites (20, 50, 200 cases); the paired gate fails >= 80% of 10-point drops, <= 5% "
            f"of A/As: {'held' if stats_held else 'not held (see the tables)'}"
        )
    if not everything:
        return out
    out += [f"  [not measured] {what}" for what in UNMEASURED]
    if not any(f.key == "fixture_load_s" for f in found):
        out.append(f"  [not measured] {LOAD} (this run's fixtures are smaller: the full run)")
    return out


def write(path: Path, found: Sequence[Figure], benches: Mapping[str, str] | None = None) -> None:
    """The figures as JSON (``bench.check`` reads them): by key, each with its target and
    the benchmark that measured it (``benches``, by key: ``bench --only`` runs it again)."""
    named = benches or {}
    figures = {f.key: {**asdict(f), "bench": named.get(f.key)} for f in found}
    path.write_text(json.dumps(figures, indent=1) + "\n")
