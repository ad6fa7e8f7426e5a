"""The benchmark command runs end to end (numbers are for people, not asserted), and the
regression check compares its figures as it says."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from bench.check import changes, snapshot, worse_by
from bench.targets import Figure
from tests.helpers import HANG_GUARD_S, REPO


@pytest.mark.slow
def test_bench_runs_and_reports_every_target(tmp_path: Path) -> None:
    figures = tmp_path / "figures.json"
    out = subprocess.run(  # (--smoke: --quick's sizes, but fewer executor trials, no clusters)
        [sys.executable, "-m", "bench", "--smoke", "--json", str(figures)],
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=HANG_GUARD_S,
        check=True,
    ).stdout
    for line in (
        "open a cassette <= 25 us per call (0.25 s for 10,000)",
        "record overhead <= 0.15 ms per request, at every fill level",
        "record overhead <= 0.15 ms per request, every client",
        "world reset <= 1 ms",
        "state diff of 10 changed rows <= 1 ms",
        "tau2 airline gold pass (5 tasks) >= 15x faster than tau2's check",
        "MCP proxy adds <= 0.5 ms per call, at every number of calls",
        "a walled trial starts within 50 ms of an in-process one",
        "local executor >= 93% of the ideal (128 trials, 64 in flight)",
        "local executor, agent, <= 1.03x the bare agent",
        "[not measured] load a 1 GB fixture <= 3 s and <= 1.5 GB peak",
    ):
        assert line in out, f"bench output lacks {line!r}:\n{out}"
    written = json.loads(figures.read_text())
    shown = [line for line in out.splitlines() if "of the target)" in line]
    assert len(written) == len(shown) >= 9  # every figure with a target, printed and written
    for key, figure in written.items():
        again = Figure(**figure)
        assert again.key == key and f"({again.ratio:.2f} of the target)" in out


def test_a_figure_s_ratio_to_its_target_is_at_most_one_when_met() -> None:
    slow = Figure("t", "t", 0.3, 0.25, "lower", "0.3 s")
    assert round(slow.ratio, 2) == 1.2 and not slow.met
    low = Figure("e", "e", 0.76, 0.93, "higher", "76%")
    assert round(low.ratio, 2) == 1.22 and not low.met
    assert Figure("e", "e", 0.95, 0.93, "higher", "95%").met


def _run(**values: float) -> dict[str, dict[str, object]]:
    better = {"open_s": "lower", "efficiency": "higher", "tiny_s": "lower"}
    target = {"open_s": 1.0, "efficiency": 0.93, "tiny_s": 0.15e-3}
    return {
        key: {"key": key, "what": key, "value": v, "better": better[key], "target": target[key]}
        for key, v in values.items()
    }


def test_the_check_names_a_figure_more_than_a_fifth_worse_by_its_medians() -> None:
    old = [_run(open_s=1.0, efficiency=0.90), _run(open_s=1.1, efficiency=0.92)]
    # (medians: open 1.05 -> 1.30 is 24% worse; efficiency 0.91 -> 0.80 is 14% worse)
    new = [_run(open_s=1.3, efficiency=0.80), _run(open_s=5.0, efficiency=0.80), _run(open_s=1.05)]
    found, alone = changes(old, new)
    assert alone == []
    worse = {c.key: round(c.worse, 3) for c in found}
    assert worse == {"open_s": round(1.3 / 1.05 - 1, 3), "efficiency": round(0.91 / 0.8 - 1, 3)}
    assert [c.key for c in found if c.named] == []  # (open: 1.05 as fast as an old run)
    apart = changes(old, [_run(open_s=1.3), _run(open_s=1.4)])[0]
    assert [c.key for c in apart if c.named] == ["open_s"]  # (every new run slower)
    assert worse_by(1.0, 0.5, "lower") == -0.5  # (faster: better, never named)
    _, alone = changes([_run(open_s=1.0)], [_run(open_s=1.0, efficiency=0.9)])
    assert alone == ["efficiency"]  # (measured on one side only: listed, not compared)
    # Half again as much, but 0.02 -> 0.03 ms is a fifteenth of its 0.15 ms target: noise.
    (tiny,) = changes([_run(tiny_s=0.02e-3)], [_run(tiny_s=0.03e-3)])[0]
    assert round(tiny.worse, 2) == 0.5 and not tiny.named
    (grew,) = changes([_run(tiny_s=0.10e-3)], [_run(tiny_s=0.14e-3)])[0]
    assert grew.named  # (40% worse, by over a quarter of its target)
    assert worse_by(0.0, 0.04, "lower") == float("inf")  # (from nothing: worse, not hidden)


def test_the_check_benches_the_work_tree_as_it_is_without_touching_it(tmp_path: Path) -> None:
    repo = tmp_path / "repo"
    repo.mkdir()

    def git(*args: str) -> str:
        return subprocess.run(
            ["git", "-c", "user.name=t", "-c", "user.email=t@t", *args],
            cwd=repo, capture_output=True, text=True, check=True,
        ).stdout  # fmt: skip

    git("init", "-q")
    (repo / "kept.py").write_text("old\n")
    git("add", "kept.py")
    git("commit", "-q", "-m", "first")
    (repo / "kept.py").write_text("changed\n")
    (repo / "new.py").write_text("untracked\n")
    before = git("status", "--porcelain")
    commit = snapshot(tmp_path / "index", repo)
    assert git("show", f"{commit}:kept.py") == "changed\n"
    assert git("show", f"{commit}:new.py") == "untracked\n"
    assert git("status", "--porcelain") == before  # nothing staged, nothing moved
