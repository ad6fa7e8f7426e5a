"""Per-request cost of recording, at different numbers of requests already recorded.

Every request is a distinct chat-completion request of constant size (system
prompt, tools, a user message naming the request) answered by
``httpx.MockTransport`` with a fixed ~1.5 KB completion under realistic
headers that, as the API's do, differ per response (request id, Cloudflare
cookie, date): per-response state a recorder keeps would show up here.

Inside the recording, after filling it to N recorded requests, a window of
requests is timed one by one, alternating with baseline requests sent in
the same moment through a transport that behaves exactly like
``MockTransport`` but that nobody patches: machine noise hits both sides
alike. Overhead = median(recorded) - median(baseline). A baseline taken
before any recording is shown too.

The incumbent, vcrpy (``match_on=["method", "uri", "body"]``,
``record_mode="new_episodes"``), compares each new request with every one
already recorded, so it is measured only up to 1,000 (see ``measure_vcrpy``).

Run alone: ``python -m bench.record_overhead [--quick]``.
"""

from __future__ import annotations

import argparse
import itertools
import statistics
import tempfile
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path

import httpx
import vcr

import recorder

from . import _data
from ._report import ms, ratio, table

TARGET_S = 0.15e-3


class UnpatchedTransport(httpx.MockTransport):
    """``MockTransport``'s own code, bound at import, so class patches do not reach it."""

    handle_request = httpx.MockTransport.handle_request


@dataclass
class Point:
    """Timings of one window at one fill level."""

    recorded_before: int
    recorded: list[float]
    baseline: list[float]

    @property
    def median(self) -> float:
        return statistics.median(self.recorded)

    @property
    def base(self) -> float:
        return statistics.median(self.baseline)

    @property
    def overhead(self) -> float:
        return self.median - self.base


@dataclass
class Series:
    """One recorder measured at several fill levels."""

    name: str
    points: list[Point] = field(default_factory=list)
    fill_s: float = 0.0
    """Seconds spent sending the untimed requests that fill the recording."""
    fill_n: int = 0
    close_s: float = 0.0
    """Seconds to leave the ``with`` block (ours: footer; vcrpy: YAML save)."""


@dataclass
class OverheadResult:
    """Everything ``run`` measured."""

    window: int
    vcr_window: int
    standalone_baseline: list[float]
    ours: Series
    theirs: Series
    vcr_skipped: list[int]
    quick: bool = False

    @property
    def ok(self) -> bool:
        return all(p.overhead <= TARGET_S for p in self.ours.points)


class _Bodies:
    """Distinct request bodies, made ahead of time (never inside a timed call)."""

    def __init__(self, count: int) -> None:
        self._items = [_data.varied_request(i) for i in range(count)]
        self._next = 0

    def take(self, n: int) -> list[bytes]:
        out = self._items[self._next : self._next + n]
        assert len(out) == n, "ran out of request bodies"
        self._next += n
        return out


Heads = Iterator[list[tuple[str, str]]]


def _handler(heads: Heads) -> Callable[[httpx.Request], httpx.Response]:
    """Answer with the same completion each time, under fresh headers (ids, cookie, date)."""
    body = _data.fixed_completion()

    def handle(request: httpx.Request) -> httpx.Response:
        return httpx.Response(200, headers=next(heads), content=body)

    return handle


def _clients(heads: Heads) -> tuple[httpx.Client, httpx.Client]:
    """Return (patched client, unpatched baseline client), both with the SDK headers."""
    handle = _handler(heads)
    recorded = httpx.Client(transport=httpx.MockTransport(handle), headers=_data.REQUEST_HEADERS)
    plain = httpx.Client(transport=UnpatchedTransport(handle), headers=_data.REQUEST_HEADERS)
    return recorded, plain


def _send(http: httpx.Client, body: bytes) -> float:
    t0 = time.perf_counter()
    http.post(_data.URL, content=body)
    return time.perf_counter() - t0


def _window(
    recorded: httpx.Client, plain: httpx.Client, bodies: _Bodies, n: int, before: int
) -> Point:
    point = Point(recorded_before=before, recorded=[], baseline=[])
    for rec_body, base_body in zip(bodies.take(n), bodies.take(n), strict=True):
        point.baseline.append(_send(plain, base_body))
        point.recorded.append(_send(recorded, rec_body))
    return point


def _fill(http: httpx.Client, bodies: list[bytes]) -> float:
    t0 = time.perf_counter()
    for body in bodies:
        http.post(_data.URL, content=body)
    return time.perf_counter() - t0


def measure_ours(
    levels: list[int], window: int, bodies: _Bodies, heads: Heads, base: Path
) -> Series:
    """One recording, filled live from one level to the next, a window timed at each."""
    series = Series("agent-replay")
    recorded, plain = _clients(heads)
    with recorded, plain:
        _window(recorded, plain, bodies, 20, 0)  # warm both clients up, untimed
        done = 0
        with recorder.record(base / "overhead.cassette", agent_version="bench"):
            for level in levels:
                fill = bodies.take(level - done)
                series.fill_s += _fill(recorded, fill)
                series.fill_n += len(fill)
                series.points.append(_window(recorded, plain, bodies, window, level))
                done = level + window
            t0 = time.perf_counter()
        series.close_s = time.perf_counter() - t0
    return series


def _vcr() -> vcr.VCR:
    return vcr.VCR(filter_headers=["authorization"])


def measure_vcrpy(
    levels: list[int], window: int, bodies: _Bodies, heads: Heads, base: Path
) -> Series:
    """For each level, a YAML cassette holding that many requests, reopened and timed.

    Filling live would cost the sum of every scan (hours at 1,000 with the body
    matcher), so each cassette is filled with ``record_mode="all"`` and the
    method/uri matchers, which vcrpy answers without a scan, then saved. It is
    then reopened with ``record_mode="new_episodes"`` and
    ``match_on=["method", "uri", "body"]``: every new request is compared with
    every loaded one, exactly as with requests recorded in the same session.
    """
    series = Series("vcrpy")
    recorded, plain = _clients(heads)
    with recorded, plain:
        _window(recorded, plain, bodies, 20, 0)
        for level in levels:
            path = str(base / f"overhead-{level}.yaml")
            fill = bodies.take(level)
            with _vcr().use_cassette(
                path, record_mode="all", match_on=["method", "uri"], serializer="yaml"
            ):
                series.fill_s += _fill(recorded, fill)
            series.fill_n += len(fill)
            cm = _vcr().use_cassette(
                path,
                record_mode="new_episodes",
                match_on=["method", "uri", "body"],
                serializer="yaml",
            )
            with cm as cassette:
                assert len(cassette) == level, f"{len(cassette)} loaded, expected {level}"
                series.points.append(_window(recorded, plain, bodies, window, level))
                t0 = time.perf_counter()
            series.close_s += time.perf_counter() - t0
    return series


def _levels(levels: list[int], window: int) -> list[int]:
    """Fill levels, each at least one window past the previous one."""
    out: list[int] = []
    for level in levels:
        out.append(max(level, out[-1] + window) if out else level)
    return out


def run(quick: bool = False, workdir: Path | None = None) -> OverheadResult:
    """Measure the baseline, our recorder and vcrpy."""
    window, vcr_window = (100, 10) if quick else (200, 30)
    ours_levels = _levels([100, 1_000] if quick else [100, 1_000, 10_000], window)
    vcr_levels = [100] if quick else [100, 1_000]
    vcr_skipped = [1_000, 10_000] if quick else [10_000]
    need = 20 + 2 * window  # the standalone baseline
    need += 2 * 20 + ours_levels[-1] + 2 * window * len(ours_levels)
    need += 2 * 20 + sum(vcr_levels) + 2 * vcr_window * len(vcr_levels)
    bodies = _Bodies(need)
    heads = itertools.cycle(_data.response_headers(need))
    with tempfile.TemporaryDirectory(prefix="agent-replay-bench-") as tmp:
        base = workdir or Path(tmp)
        recorded, plain = _clients(heads)
        with plain:
            for body in bodies.take(20):
                plain.post(_data.URL, content=body)
            standalone = [_send(plain, b) for b in bodies.take(2 * window)]
        recorded.close()
        ours = measure_ours(ours_levels, window, bodies, heads, base)
        theirs = measure_vcrpy(vcr_levels, vcr_window, bodies, heads, base)
    return OverheadResult(window, vcr_window, standalone, ours, theirs, vcr_skipped, quick)


def report(r: OverheadResult) -> str:
    """Render the result as a table."""
    base = statistics.median(r.standalone_baseline)
    ours_at = {p.recorded_before: p for p in r.ours.points}
    rows = []
    for series, window in ((r.ours, r.window), (r.theirs, r.vcr_window)):
        for p in series.points:
            mine = ours_at.get(p.recorded_before)
            vs = ratio(p.overhead, mine.overhead) if series is r.theirs and mine else ""
            verdict = ""
            if series is r.ours:
                verdict = (
                    f"<= {TARGET_S * 1000:g} ms  {'ok' if p.overhead <= TARGET_S else 'MISSED':6}"
                )
            rows.append(
                [
                    series.name,
                    f"{p.recorded_before:,}",
                    str(window),
                    ms(p.base),
                    ms(p.median),
                    ms(p.overhead),
                    ratio(p.median, p.base),
                    vs,
                    verdict,
                ]
            )
    for n in r.vcr_skipped:
        rows.append([r.theirs.name, f"{n:,}", "-", "-", "-", "not measured", "", "", ""])
    out = table(
        "Per-request time while recording (medians; ~1.5 KB response, ~3.8 KB distinct requests)",
        [
            "recorder",
            "already recorded",
            "requests",
            "baseline",
            "recorded",
            "overhead",
            "recorded / baseline",
            "vcrpy / ours",
            "target",
        ],
        rows,
    )
    per = r.ours.fill_s / r.ours.fill_n if r.ours.fill_n else 0.0
    lines = [
        out,
        "  baseline = the same request through an unpatched copy of MockTransport, timed "
        "alternately with the recorded one;",
        f"  measured alone before any recording it was {ms(base)} "
        f"(median of {len(r.standalone_baseline)}).",
        f"  agent-replay: {r.ours.fill_n:,} untimed fill requests took {ms(per)} each on "
        f"average (mean, GC included); closing the cassette (footer) took {r.ours.close_s:.2f} s.",
        "  vcrpy: each level is a YAML cassette filled with record_mode='all' (no scan), then "
        "reopened with",
        "  record_mode='new_episodes', match_on=['method', 'uri', 'body']: every new request is "
        "compared with every",
        "  recorded one, and vcrpy 9.4 renders a JSON diff (difflib) for each mismatch.",
    ]
    if r.vcr_skipped:
        levels = " and ".join(f"{n:,}" for n in r.vcr_skipped)
        why = (
            "skipped by --quick"
            if r.quick and 1_000 in r.vcr_skipped
            else "it would take too long: the cost per request grows with the number recorded"
        )
        lines.append(
            f"  vcrpy at {levels} recorded: not measured ({why}). No extrapolation is made."
        )
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> None:
    """Run this benchmark alone."""
    parser = argparse.ArgumentParser(prog="python -m bench.record_overhead", description=__doc__)
    parser.add_argument("--quick", action="store_true", help="smaller fill levels and windows")
    args = parser.parse_args(argv)
    print(report(run(quick=args.quick)))


if __name__ == "__main__":
    main()
