"""The benchmark command runs end to end (numbers are for people, not asserted), and the
regression check benches the work tree as it is (its rule: tests/test_bench_check.py)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from bench.__main__ import BENCHES
from bench.check import snapshot
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
        "tau2 airline gold pass (2 tasks) >= 15x faster than tau2's check",
        "MCP proxy adds <= 0.5 ms per call, at every number of calls",
        "a walled trial starts within 50 ms of an in-process one",
        "local executor >= 93% of the ideal (64 trials, 64 in flight)",
        "local executor, agent, <= 1.03x the bare agent",
        "[not measured] load a 1 GB fixture <= 3 s and <= 1.5 GB peak",
    ):
        assert line in out, f"bench output lacks {line!r}:\n{out}"
    written = json.loads(figures.read_text())
    shown = [line for line in out.splitlines() if "of the target)" in line]
    assert len(written) == len(shown) >= 9  # every figure with a target, printed and written
    for key, figure in written.items():
        assert figure.pop("bench") in {b.name for b in BENCHES}  # (what measured it)
        again = Figure(**figure)
        assert again.key == key and f"({again.ratio:.2f} of the target)" in out


def test_only_runs_the_benchmarks_named_and_refuses_a_name_it_does_not_know(
    tmp_path: Path,
) -> None:
    figures = tmp_path / "figures.json"
    run = [sys.executable, "-m", "bench", "--smoke", "--only", "state_diff", "--json"]
    done = subprocess.run(
        [*run, str(figures)], cwd=REPO, capture_output=True, text=True, timeout=HANG_GUARD_S
    )
    assert done.returncode == 0, done.stderr
    assert "state diff" in done.stdout and "open a cassette" not in done.stdout
    assert [(k, f["bench"]) for k, f in json.loads(figures.read_text()).items()] == [
        ("state_diff_s", "state_diff")
    ]
    unknown = subprocess.run(
        [sys.executable, "-m", "bench", "--only", "state_diff,nope"],
        cwd=REPO, capture_output=True, text=True, timeout=HANG_GUARD_S,
    )  # fmt: skip
    assert unknown.returncode == 2 and "no benchmark nope" in unknown.stderr


def test_a_figure_s_ratio_to_its_target_is_at_most_one_when_met() -> None:
    slow = Figure("t", "t", 0.3, 0.25, "lower", "0.3 s")
    assert round(slow.ratio, 2) == 1.2 and not slow.met
    low = Figure("e", "e", 0.76, 0.93, "higher", "76%")
    assert round(low.ratio, 2) == 1.22 and not low.met
    assert Figure("e", "e", 0.95, 0.93, "higher", "95%").met


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
