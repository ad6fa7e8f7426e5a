"""A run's pass@k and pass^k against k, as an inline SVG (no script, no network)."""

from __future__ import annotations

from collections.abc import Mapping

from ..results import Interval
from ._html import _e

BARS_UP_TO = 12
"""Up to this many values of k each point has its own error bar; past it, where the
bars would crowd into a comb, each curve's intervals are one shaded band."""


def _ticks(ks: list[int]) -> list[int]:
    """The ks labelled on the x axis: every one up to ten, else a round step, and the last."""
    if len(ks) <= 10:
        return ks
    span = ks[-1] - ks[0]
    step = next(s for s in (2, 5, 10, 20, 25, 50, 100, 200, 500, 1000, 10**9) if span / s <= 8)
    shown = [k for k in ks if k == ks[0] or k % step == 0]
    # (the last k, unless a round one sits too close to it to leave room for both)
    if shown[-1] != ks[-1] and ks[-1] - shown[-1] < step / 2:
        shown.pop()
    return [*shown, ks[-1]] if shown[-1] != ks[-1] else shown


def curves_svg(
    pass_at: dict[int, float],
    pass_hat: dict[int, float],
    intervals: dict[str, Mapping[int, Interval]] | None = None,
) -> str:
    """Draw pass@k and pass^k against k as an inline SVG: two curves, axes and labels.

    ``intervals`` (by curve name, ``pass@k`` or ``pass^k``): each point's error bar, or
    for more than ``BARS_UP_TO`` values of k, a band. Each curve's last value is written at
    its end; the drawing scales down to a phone's width.
    """
    ks = sorted(pass_hat)
    if not ks:
        return '<p class="meta">no graded trial: no curve to draw</p>'
    few = len(ks) <= BARS_UP_TO

    def x(k: int) -> float:  # the plot spans x 50..400 and y 200 (rate 0) .. 20 (rate 1)
        return round(50 + 350 * ((k - ks[0]) / (ks[-1] - ks[0]) if len(ks) > 1 else 0.5), 1)

    def y(rate: float) -> float:
        return round(200 - 180 * rate, 1)

    parts = [
        '<path d="M50 20V200H400" fill="none" stroke="#333"/>',
        '<text x="225" y="238" text-anchor="middle">k (trials of a case)</text>',
        '<text x="14" y="110" transform="rotate(-90 14 110)" text-anchor="middle">rate</text>',
    ]
    for v in (0.0, 0.25, 0.5, 0.75, 1.0):
        parts.append(f'<path d="M51 {y(v)}H400" stroke="#e4e4e4"/>')
        parts.append(f'<text x="44" y="{y(v) + 4}" text-anchor="end">{v:g}</text>')
    parts += [f'<text x="{x(k)}" y="217" text-anchor="middle">{k}</text>' for k in _ticks(ks)]
    ends: list[tuple[float, str, str]] = []
    for label, values, color in (("pass@k", pass_at, "#2471a3"), ("pass^k", pass_hat, "#d35400")):
        points = [(x(k), y(values[k])) for k in ks if k in values]
        bars = (intervals or {}).get(label, {})
        banded = [k for k in ks if k in bars and k in values]
        if banded and not few:
            edge = [f"{x(k)},{y(bars[k][1])}" for k in banded]
            edge += [f"{x(k)},{y(bars[k][0])}" for k in reversed(banded)]
            parts.append(
                f'<polygon class="band" data-name="{label}" points="{" ".join(edge)}" '
                f'fill="{color}" opacity="0.15"/>'
            )
        # pass@k's bars sit a little left and pass^k's right, so that they never overlap.
        shift = -3 if label == "pass@k" else 3
        for k in banded if few else []:
            low, high = bars[k]
            bx, top, bottom = x(k) + shift, y(high), y(low)
            parts.append(
                f'<path class="error-bar" data-name="{label}" data-k="{k}" '
                f'd="M{bx - 3} {top}H{bx + 3}M{bx} {top}V{bottom}M{bx - 3} {bottom}H{bx + 3}" '
                f'stroke="{color}" stroke-width="1.2" opacity="0.7"><title>{label} k={k}: '
                f"{values[k]:.3f} [{low:.3f}, {high:.3f}]</title></path>"
            )
        line = " ".join(f"{px},{py}" for px, py in points)
        parts.append(
            f'<polyline class="curve" data-name="{label}" fill="none" stroke="{color}" '
            f'stroke-width="2" points="{line}"/>'
        )
        if few:
            parts += [f'<circle cx="{px}" cy="{py}" r="3" fill="{color}"/>' for px, py in points]
        if points:
            last = max(k for k in ks if k in values)
            end = f"{label.replace('k', str(last))} {values[last]:.3f}"
            ends.append((points[-1][1], end, color))
    if len(ends) == 2 and abs(ends[0][0] - ends[1][0]) < 13:  # (labels apart, not on top)
        middle = (ends[0][0] + ends[1][0]) / 2
        ends.sort()
        ends = [(middle - 6.5, *ends[0][1:]), (middle + 6.5, *ends[1][1:])]
    parts += [
        f'<text class="end" x="406" y="{py + 4}" fill="{color}">{_e(text)}</text>'
        for py, text, color in ends
    ]
    band = "bands" if not few else "bars"
    return (
        '<svg viewBox="0 0 525 245" width="525" font-size="12" role="img" '
        'style="max-width:100%;height:auto" '
        f'aria-label="pass@k and pass^k against k">{"".join(parts)}</svg>'
        '<p><span class="legend-at">&#9632; pass@k</span> (at least one of k passes) '
        '<span class="legend-hat">&#9632; pass^k</span> (all k pass)'
        + (f"; {band}: each figure's interval" if intervals else "")
        + "</p>"
    )
