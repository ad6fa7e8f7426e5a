"""Small helpers shared by the benchmarks: timing, units, a plain-text table."""

from __future__ import annotations

import statistics
import time
from collections.abc import Callable, Sequence
from typing import Any


def timed(fn: Callable[[], Any]) -> tuple[float, Any]:
    """Return (seconds taken, result) of one call of ``fn``."""
    t0 = time.perf_counter()
    result = fn()
    return time.perf_counter() - t0, result


def median_time(fn: Callable[[], Any], reps: int) -> float:
    """Return the median over ``reps`` calls of ``fn`` of the seconds each took."""
    return statistics.median(timed(fn)[0] for _ in range(reps))


def mb(n: float) -> str:
    """Format a byte count in MB (10^6 bytes)."""
    return f"{n / 1e6:,.2f} MB"


def secs(s: float) -> str:
    """Format seconds with a unit that keeps 3 significant-ish digits."""
    if s >= 1:
        return f"{s:,.2f} s"
    if s >= 1e-3:
        return f"{s * 1e3:,.1f} ms"
    return f"{s * 1e6:,.1f} us"


def ms(s: float) -> str:
    """Format seconds as milliseconds with 3 decimals (for per-request times)."""
    return f"{s * 1e3:.3f} ms"


def ratio(a: float, b: float) -> str:
    """Format ``a / b`` as ``12.3x`` (``n/a`` when ``b`` is not positive)."""
    return f"{a / b:,.1f}x" if b > 0 else "n/a"


def table(title: str, header: Sequence[str], rows: Sequence[Sequence[str]]) -> str:
    """Render a left-aligned first column and right-aligned others, with a title line."""
    cells = [list(header), *[list(r) for r in rows]]
    widths = [max(len(r[i]) for r in cells) for i in range(len(header))]

    def line(r: list[str]) -> str:
        rest = [c.rjust(w) for c, w in zip(r[1:], widths[1:], strict=True)]
        parts = [r[0].ljust(widths[0]), *rest]
        return "  ".join(parts).rstrip()

    rule = "-" * len(line(cells[0]))
    return "\n".join([title, rule, line(cells[0]), rule, *(line(r) for r in cells[1:]), rule])
