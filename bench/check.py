"""``python -m bench.check [--against REV] [--rounds N]`` (``make bench-check``): did it get slower?

Runs ``python -m bench --quick`` on this work tree and on ``REV``, each from a fresh git
worktree made in ``.replay/`` and removed (the work tree's as a commit of every file git
would add, untracked ones too, made without touching the index: the same fresh folder
on both sides, no ``__pycache__`` or ``node_modules`` on one only), alternating
(old-new, then new-old), ``N`` rounds each
(default 2), on this machine; takes each figure's median per side and names every
figure that got more than 20% worse (a time that grew by a fifth, an efficiency that
fell by a sixth) by more than a tenth of its target (noise on a figure far under its
target is not named) and in every run (each of the work tree's worse than each of
``REV``'s: two quick runs of one commit differ by up to 40% here), with both medians.
Exits 1 if any did, 0 if none, 2 if it could not compare (``REV`` predates the figures
file). ``REV`` defaults to the previous commit: ``HEAD`` when the work tree has changes
(the change at hand against where it started), else ``HEAD~1``.

Figures measured on one side only (Ray, Dask, the walls or tau2 missing there) are
listed, not compared. Noise is the limit: run it on an otherwise quiet machine.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import statistics
import subprocess
import sys
import tempfile
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]
WORSE = 0.20
"""How much worse a figure may get (a fifth) before it is named."""
MOVED = 0.10
"""...and by how much of its target at least: an overhead of 0.02 ms that became
0.03 ms is half again as much, and noise, far under its 0.15 ms target."""


def worse_by(old: float, new: float, better: str) -> float:
    """How much worse ``new`` is than ``old`` (0.25: a quarter worse; negative: better)."""
    if better == "lower":
        if old <= 0:
            return float("inf") if new > max(old, 0.0) else 0.0
        return new / old - 1
    return old / new - 1 if new > 0 else float("inf")


def moved(old: float, new: float, target: float, better: str) -> float:
    """How far it moved the wrong way, in units of its target (0.1: a tenth of it)."""
    return (new - old if better == "lower" else old - new) / target


@dataclass(frozen=True)
class Change:
    """One figure's median on each side, and how much worse it got."""

    key: str
    what: str
    old: float
    new: float
    worse: float
    """0.25: a quarter worse; negative: better."""
    moved: float
    """How far the wrong way, in units of its target."""
    apart: bool
    """Whether every run of the new side is worse than every run of the old."""

    @property
    def named(self) -> bool:
        """More than ``WORSE`` worse, by more than ``MOVED`` of its target, every run."""
        return self.worse > WORSE and self.moved > MOVED and self.apart


def changes(
    old: Sequence[Mapping[str, Any]], new: Sequence[Mapping[str, Any]]
) -> tuple[list[Change], list[str]]:
    """Each figure's change between two sides' runs, and the keys of one side only.

    The runs are ``bench.targets.write``'s figures by key; each side's value is the
    median of its runs.
    """
    keys_old = {key for run in old for key in run}
    keys_new = {key for run in new for key in run}
    found = []
    for key in sorted(keys_old & keys_new):
        a = statistics.median(run[key]["value"] for run in old if key in run)
        b = statistics.median(run[key]["value"] for run in new if key in run)
        last = next(run[key] for run in new if key in run)
        better, target = last["better"], last["target"]
        olds = [run[key]["value"] for run in old if key in run]
        news = [run[key]["value"] for run in new if key in run]
        apart = min(news) > max(olds) if better == "lower" else max(news) < min(olds)
        found.append(
            Change(
                key, last["what"], a, b, worse_by(a, b, better), moved(a, b, target, better), apart
            )
        )
    return found, sorted(keys_old ^ keys_new)


def _quick(tree: Path, out: Path) -> dict[str, Any] | None:
    """One ``bench --quick`` of ``tree`` (from its folder: its own code); its figures."""
    done = subprocess.run(
        [sys.executable, "-m", "bench", "--quick", "--json", str(out)],
        cwd=tree,
        env={**os.environ, "PYTHONPATH": str(tree)},
        capture_output=True,
        text=True,
    )
    if done.returncode != 0 or not out.exists():
        tail = (done.stderr or done.stdout).strip().splitlines()[-1:]
        print(f"  bench in {tree} failed: {tail[0] if tail else done.returncode}", file=sys.stderr)
        return None
    figures: dict[str, Any] = json.loads(out.read_text())
    return figures


def _git(*args: str, env: Mapping[str, str] | None = None, repo: Path = REPO) -> str:
    return subprocess.run(
        ["git", *args], cwd=repo, capture_output=True, text=True, check=True, env=env
    ).stdout.strip()


def snapshot(index: Path, repo: Path = REPO) -> str:
    """A commit of the work tree as it is (untracked files too), made with its own index.

    Neither the work tree nor its index changes; the commit is on no branch.
    """
    env = {**os.environ, "GIT_INDEX_FILE": str(index)}
    _git("read-tree", "HEAD", env=env, repo=repo)
    _git("add", "--all", env=env, repo=repo)
    tree = _git("write-tree", env=env, repo=repo)
    message = "bench.check: the work tree"
    return _git("commit-tree", tree, "-p", "HEAD", "-m", message, env=env, repo=repo)


def main(argv: list[str] | None = None) -> int:
    """Compare; print what got worse; the exit code says whether anything did."""
    parser = argparse.ArgumentParser(prog="python -m bench.check", description=__doc__)
    parser.add_argument("--against", metavar="REV", help="the revision to compare with")
    parser.add_argument("--rounds", type=int, default=2, help="runs on each side (default 2)")
    args = parser.parse_args(argv)
    changed = _git("status", "--porcelain", "--untracked-files=no")
    rev = args.against or ("HEAD" if changed else "HEAD~1")
    commit = _git("rev-parse", "--short", rev)
    old_runs: list[dict[str, Any]] = []
    new_runs: list[dict[str, Any]] = []
    _git("worktree", "prune")  # (one a check stopped hard left behind)
    (REPO / ".replay").mkdir(exist_ok=True)
    # Beside the work tree, in the same filesystem, out of git's sight (not under /tmp:
    # a walled agent's working directory there is the sandbox's private one).
    with tempfile.TemporaryDirectory(prefix="bench-check-", dir=REPO / ".replay") as tmp:
        old_tree, new_tree = Path(tmp) / "old", Path(tmp) / "new"
        _git("worktree", "add", "--detach", str(old_tree), commit)
        _git("worktree", "add", "--detach", str(new_tree), snapshot(Path(tmp) / "index"))
        sides = [("old", old_tree, old_runs), ("new", new_tree, new_runs)]
        try:
            for n in range(args.rounds):
                for side, tree, runs in sides if n % 2 == 0 else sides[::-1]:  # (ABBA...)
                    which = commit if side == "old" else "the work tree"
                    print(f"round {n + 1}/{args.rounds}: {which}", flush=True)
                    found = _quick(tree, Path(tmp) / f"{side}-{n}.json")
                    if found is None and side == "old" and not old_runs:
                        print(
                            f"cannot compare: {commit}'s bench failed (above; a revision "
                            "before bench --json writes no figures)"
                        )
                        return 2
                    if found is not None:
                        runs.append(found)
        finally:
            for tree in (old_tree, new_tree):
                with contextlib.suppress(subprocess.CalledProcessError):
                    _git("worktree", "remove", "--force", str(tree))
    if not new_runs:
        print("cannot compare: this work tree's bench failed")
        return 2
    found, alone = changes(old_runs, new_runs)
    print(f"\nagainst {commit}, the median of {args.rounds} quick runs each:")
    for c in found:
        mark = "WORSE" if c.named else "     "
        print(f"  {mark} {c.key}: {c.old:.4g} -> {c.new:.4g} ({c.worse:+.0%} worse)  {c.what}")
    for key in alone:
        print(f"        {key}: measured on one side only")
    worse = [c for c in found if c.named]
    print(
        f"{len(worse)} figures more than {WORSE:.0%} worse: {', '.join(c.key for c in worse)}"
        if worse
        else f"no figure more than {WORSE:.0%} worse"
    )
    return 1 if worse else 0


if __name__ == "__main__":
    raise SystemExit(main())
