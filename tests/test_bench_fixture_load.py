"""The fixture load target: measured at 1 GB by the full run, "not measured" by a quick one."""

from __future__ import annotations

import dataclasses
import sys
from pathlib import Path
from typing import Any

import pytest

from bench import targets, world_reset


def test_one_size_measures_its_load_and_both_hashes(tmp_path: Path) -> None:
    result = world_reset.measure_size(2_000_000, tmp_path)
    assert result.load_s > 0 and result.hash_s > 0 and result.v1_hash_s > 0
    if sys.platform == "linux":
        assert result.load_rss >= result.base_rss > 0
    shown = world_reset.report(world_reset.ResetResult([result]))
    assert "load peak" in shown and "v1 hash" in shown
    assert list(tmp_path.iterdir()) == []  # (its files are gone)


def _at(size: int, load_s: float, load_rss: int) -> world_reset.SizeResult:
    fields: dict[str, Any] = {f.name: 0 for f in dataclasses.fields(world_reset.SizeResult)}
    fields.update(target=size, load_s=load_s, load_rss=load_rss, resets=[1e-5], copies=[1e-3])
    return world_reset.SizeResult(**fields)


@pytest.mark.parametrize(
    ("load_s", "load_rss", "met"),
    [(2.5, 1_100_000_000, [True, True]), (4.0, 1_600_000_000, [False, False])],
)
def test_a_full_run_holds_the_1_gb_load_to_its_targets(
    load_s: float, load_rss: int, met: list[bool]
) -> None:
    reset = world_reset.ResetResult(
        [_at(10_000_000, 0.01, 10), _at(1_000_000_000, load_s, load_rss)]
    )
    found = targets._load(reset)
    assert [(f.key, f.what) for f in found] == [
        ("fixture_load_s", "load a 1 GB fixture <= 3 s"),
        ("fixture_load_rss", "load a 1 GB fixture <= 1.5 GB peak"),
    ]
    assert [f.met for f in found] == met
    assert found[0].ratio == pytest.approx(load_s / 3)
    assert not any("[not measured]" in line for line in targets.lines(found, True))


def test_a_quick_run_says_the_1_gb_load_is_not_measured() -> None:
    reset = world_reset.ResetResult([_at(10_000_000, 0.01, 50_000_000)])
    assert targets._load(reset) == []
    (line,) = [line for line in targets.lines([], True) if "[not measured]" in line]
    assert "[not measured] load a 1 GB fixture <= 3 s and <= 1.5 GB peak" in line
