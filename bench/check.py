"""``python -m bench.check [--against REV] [--rounds N] [--confirm K]`` (``make bench-check``).

Did it get slower? Runs ``python -m bench --quick`` on this work tree and on ``REV``,
each from a fresh git worktree made in ``.replay/`` and removed (the work tree's as a
commit of every file git would add, untracked ones too, made without touching the
index: the same fresh folder on both sides, no ``__pycache__`` or ``node_modules`` on
one only), alternating (old-new, then new-old), ``N`` rounds each (default 2), on this
machine.

A figure is *suspect* when its median over one side's runs is more than 20% worse than
over the other's (a time that grew by a fifth, an efficiency that fell by a sixth) and
by more than a tenth of its target (noise on a figure far under its target is not
suspect). Two quick runs of one commit differ by up to 40% here, so a suspect is not yet
named: its benchmark alone (``bench --only``) runs ``K`` more rounds on each side
(default 4), alternating, and the figure is named only if, over all its runs, it is
still suspect and the new side's runs rank worse than the old's beyond chance: a
one-sided exact rank test (Mann-Whitney's U by permutation) at ``ALPHA`` (1%). Seeded
simulation (tests/test_bench_check.py) holds the rule to it: a figure whose runs spread
by 30% (the noisiest here) is named in about one A/A check in a hundred or fewer, and
one half again as slow, with runs spreading 15%, in six checks of seven.

Prints each figure's two medians (and each suspect's p-value), names what got worse,
exits 1 if any did, 0 if none, 2 if it could not compare (``REV`` predates the figures
file). ``REV`` defaults to the previous commit: ``HEAD`` when the work tree has changes
(the change at hand against where it started), else ``HEAD~1``. Figures measured on one
side only (Ray, Dask, the walls or tau2 missing there) are listed, not compared. Noise
is still the limit: run it on an otherwise quiet machine.
"""

from __future__ import annotations

import argparse
import contextlib
import itertools
import json
import math
import os
import random
import statistics
import subprocess
import sys
import tempfile
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]
WORSE = 0.20
"""How much worse a figure may get (a fifth) before it is named."""
MOVED = 0.10
"""...and by how much of its target at least: an overhead of 0.02 ms that became
0.03 ms is half again as much, and noise, far under its 0.15 ms target."""
ALPHA = 0.01
"""A suspect is named when chance alone would rank the new runs this far worse at most
this often (one-sided)."""
CONFIRM = 4
"""Rounds more of each suspect's benchmark, on each side."""
_PERMUTATIONS = 20_000
"""At most this many of the runs' splits are counted; beyond, a seeded sample of them."""


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


def p_worse(olds: Sequence[float], news: Sequence[float], better: str) -> float:
    """The chance of the new runs ranking at least this far worse than the old, were both
    sides one (a one-sided Mann-Whitney test, exact: every split of the runs counted).

    The statistic is the number of (new, old) pairs where the new run is worse, a tie
    counting a half. Small: two runs a side can never be below 1/6, four 1/70.
    """
    sign = 1.0 if better == "lower" else -1.0
    pool = [sign * v for v in (*olds, *news)]
    n = len(news)

    def u(picked: Sequence[int]) -> float:
        chosen = set(picked)
        new = [pool[i] for i in picked]
        old = [pool[i] for i in range(len(pool)) if i not in chosen]
        return sum((a > b) + 0.5 * (a == b) for a in new for b in old)

    seen = u(range(len(olds), len(pool)))
    if math.comb(len(pool), n) <= _PERMUTATIONS:
        splits: Iterable[Sequence[int]] = itertools.combinations(range(len(pool)), n)
    else:
        rng = random.Random(0)
        splits = (rng.sample(range(len(pool)), n) for _ in range(_PERMUTATIONS))
    counts = [u(split) >= seen - 1e-9 for split in splits]
    return sum(counts) / len(counts)


@dataclass(frozen=True)
class Change:
    """One figure's median on each side, how much worse it got, and how surely."""

    key: str
    what: str
    old: float
    new: float
    worse: float
    """0.25: a quarter worse; negative: better."""
    moved: float
    """How far the wrong way, in units of its target."""
    p: float
    """``p_worse`` of its runs: how often chance alone ranks them this far worse."""
    runs: int
    """Runs on the side with fewer."""

    @property
    def suspect(self) -> bool:
        """More than ``WORSE`` worse by its medians, by more than ``MOVED`` of its target."""
        return self.worse > WORSE and self.moved > MOVED

    @property
    def named(self) -> bool:
        """Suspect, and worse beyond chance (``p`` at most ``ALPHA``)."""
        return self.suspect and self.p <= ALPHA


def changes(
    old: Sequence[Mapping[str, Any]], new: Sequence[Mapping[str, Any]]
) -> tuple[list[Change], list[str]]:
    """Each figure's change between two sides' runs, and the keys of one side only.

    The runs are ``bench.targets.write``'s figures by key (a run may hold some figures
    only: those of the benchmarks it ran); each side's value is the median of its runs.
    """
    keys_old = {key for run in old for key in run}
    keys_new = {key for run in new for key in run}
    found = []
    for key in sorted(keys_old & keys_new):
        olds = [run[key]["value"] for run in old if key in run]
        news = [run[key]["value"] for run in new if key in run]
        a, b = statistics.median(olds), statistics.median(news)
        last = next(run[key] for run in new if key in run)
        better, target = last["better"], last["target"]
        how = worse_by(a, b, better), moved(a, b, target, better), p_worse(olds, news, better)
        found.append(Change(key, last["what"], a, b, *how, min(len(olds), len(news))))
    return found, sorted(keys_old ^ keys_new)


Measure = Callable[[str, "Sequence[str] | None"], "Mapping[str, Any] | None"]
"""One quick bench of a side (``"old"``, ``"new"``), of these benchmarks only (None:
all); its figures by key, or None if it failed."""


def judge(
    measure: Measure, rounds: int = 2, confirm: int = CONFIRM
) -> tuple[list[Change], list[str]] | None:
    """Both sides' runs, alternating, then more of each suspect's benchmark; the changes.

    None if the old side's first run failed (nothing to compare with).
    """
    runs: dict[str, list[Mapping[str, Any]]] = {"old": [], "new": []}

    def rounds_of(count: int, only: Sequence[str] | None) -> bool:
        for n in range(count):
            for side in ("old", "new") if n % 2 == 0 else ("new", "old"):  # (ABBA...)
                print(f"round {n + 1}/{count}: {side}{' ' + ','.join(only) if only else ''}")
                found = measure(side, only)
                if found is None and side == "old" and not runs["old"]:
                    return False
                if found is not None:
                    runs[side].append(found)
        return True

    if not rounds_of(rounds, None):
        return None
    found, _ = changes(runs["old"], runs["new"])
    suspects = {c.key for c in found if c.suspect}
    if suspects and confirm > 0:
        benches = {run[key].get("bench") for run in runs["new"] for key in suspects if key in run}
        only = None if None in benches else sorted(b for b in benches if b)
        print(f"suspect: {', '.join(sorted(suspects))}; {confirm} rounds more", flush=True)
        rounds_of(confirm, only)
    return changes(runs["old"], runs["new"])


def _quick(tree: Path, out: Path, only: Sequence[str] | None) -> dict[str, Any] | None:
    """One ``bench --quick`` of ``tree`` (from its folder: its own code); its figures.

    ``only``: those benchmarks, where the tree's bench can (``--only``); else all.
    """
    if only and "--only" not in (tree / "bench" / "__main__.py").read_text():
        only = None  # (an older revision: every benchmark, the figures wanted among them)
    picked = ["--only", ",".join(only)] if only else []
    done = subprocess.run(
        [sys.executable, "-m", "bench", "--quick", *picked, "--json", str(out)],
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
    out.unlink()
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
    parser = argparse.ArgumentParser(
        prog="python -m bench.check",
        description=__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("--against", metavar="REV", help="the revision to compare with")
    parser.add_argument("--rounds", type=int, default=2, help="runs on each side (default 2)")
    parser.add_argument(
        "--confirm",
        type=int,
        default=CONFIRM,
        metavar="K",
        help=f"runs more of each suspect's benchmark on each side (default {CONFIRM})",
    )
    args = parser.parse_args(argv)
    changed = _git("status", "--porcelain", "--untracked-files=no")
    rev = args.against or ("HEAD" if changed else "HEAD~1")
    commit = _git("rev-parse", "--short", rev)
    _git("worktree", "prune")  # (one a check stopped hard left behind)
    (REPO / ".replay").mkdir(exist_ok=True)
    # Beside the work tree, in the same filesystem, out of git's sight (not under /tmp:
    # a walled agent's working directory there is the sandbox's private one).
    with tempfile.TemporaryDirectory(prefix="bench-check-", dir=REPO / ".replay") as tmp:
        trees = {"old": Path(tmp) / "old", "new": Path(tmp) / "new"}
        _git("worktree", "add", "--detach", str(trees["old"]), commit)
        _git("worktree", "add", "--detach", str(trees["new"]), snapshot(Path(tmp) / "index"))
        print(f"old: {commit}; new: the work tree", flush=True)
        try:
            judged = judge(
                lambda side, only: _quick(trees[side], Path(tmp) / f"{side}.json", only),
                args.rounds,
                args.confirm,
            )
        finally:
            for tree in trees.values():
                with contextlib.suppress(subprocess.CalledProcessError):
                    _git("worktree", "remove", "--force", str(tree))
    if judged is None:
        print(f"cannot compare: {commit}'s bench failed (above; a revision before bench --json")
        return 2
    found, alone = judged
    if not found:
        print("cannot compare: this work tree's bench failed")
        return 2
    print(f"\nagainst {commit}, medians of each side's runs (p: chance of runs this far worse):")
    for c in found:
        mark = "WORSE" if c.named else "     "
        sure = f", p={c.p:.3f} over {c.runs} runs a side" if c.suspect else ""
        print(
            f"  {mark} {c.key}: {c.old:.4g} -> {c.new:.4g} ({c.worse:+.0%} worse{sure})  {c.what}"
        )
    for key in alone:
        print(f"        {key}: measured on one side only")
    worse = [c for c in found if c.named]
    print(
        f"{len(worse)} figures more than {WORSE:.0%} worse: {', '.join(c.key for c in worse)}"
        if worse
        else f"no figure more than {WORSE:.0%} worse beyond chance (p <= {ALPHA})"
    )
    return 1 if worse else 0


if __name__ == "__main__":
    raise SystemExit(main())
