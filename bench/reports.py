"""Reading a large run: ``replay report`` / ``report --json`` / ``gate`` / ``report --html``.

A store of two runs (a baseline and a candidate) of 1,000 cases x 100 trials each is
built through the public ``Store`` API (``start_run`` / ``add_trial`` / ``finish_run``)
with realistic trials: mixed verdicts (pass, fail, error of each cause, unknown,
unsupported), grades with evidence (state, rule, judge), limits that fired, usage
(steps, tokens, cost, latency), tool use and partial credit. Each command then runs in
a fresh child process (the CLI, as a user runs it), timed wall to wall, its peak RSS
read from ``getrusage(RUSAGE_CHILDREN)`` of a wrapper that ran it alone; the HTML
page's size is its file's. ``gate`` is the paired gate of the candidate against the
baseline (``--max-drop``).

The trials are seeded: the same store every time. Run alone:
``python -m bench.reports [--quick]`` (quick: 200 cases x 50 trials).
"""

from __future__ import annotations

import argparse
import json
import random
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

from replay import Expects, GradeRecord, Store, Suite, TrialRecord, TrialUsage
from replay.graders import Cause, TrialToolUse, Verdict
from replay.modes import Guard

from ._report import mb, secs, table

FULL = (1_000, 100)
QUICK = (200, 50)
SMOKE = (50, 20)
TARGET_S = 2.0
TARGET_RSS = 200e6
TARGET_PAGE = 5e6
"""The first HTML page a large run opens on."""

COMMANDS: tuple[tuple[str, tuple[str, ...]], ...] = (
    ("report", ("report", "cand")),
    ("report --json", ("report", "cand", "--json")),
    ("gate", ("gate", "--baseline", "base", "--candidate", "cand", "--max-drop", "0.05")),
    ("report --html", ("report", "cand", "--html", "{html}")),
)

_WRAPPER = """
import json, resource, subprocess, sys, time
t0 = time.perf_counter()
done = subprocess.run(sys.argv[1:], stdout=subprocess.PIPE, stderr=subprocess.PIPE)
wall = time.perf_counter() - t0
peak = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss * 1024
print(json.dumps({"wall": wall, "rss": peak, "rc": done.returncode,
                  "out": len(done.stdout), "err": done.stderr.decode()[-2000:]}))
"""
"""Runs one command as its only child: its RUSAGE_CHILDREN peak is that command's alone."""

_CLI = "import sys; from replay._cli.main import main; sys.argv[0] = 'replay'; main()"


@dataclass
class Timing:
    """One command on the store."""

    name: str
    wall_s: float
    rss: int
    """Peak resident set of the child process, bytes."""
    rc: int
    output: int
    """Bytes it printed."""
    page: int | None = None
    """The HTML page's size (``report --html``)."""


@dataclass
class Result:
    """The store built and every command timed on it."""

    cases: int
    trials: int
    build_s: float
    store_bytes: int
    timings: list[Timing]


def build(path: Path, cases: int, trials: int, seed: int = 7) -> None:
    """Two finished runs, ``base`` and ``cand``, of ``cases`` x ``trials`` seeded trials."""
    rng = random.Random(seed)
    store = Store(path)
    spec = {"mode": "review", "cases": [f"case-{i:04d}" for i in range(cases)], "trials": trials}
    for name, model in (("base", "m-1"), ("cand", "m-2")):
        store.start_run(name, spec, {"mode": "review", "model": model, "fixture": "f1"})
        for i in range(cases):
            case = _Case(
                f"case-{i:04d}",
                rng.choice((1.0, 0.98, 0.9, 0.7, 0.5, 0.2, 0.0)),
                Suite.REGRESSION if i % 3 else Suite.CAPABILITY,
                (Expects.ACT, Expects.REFRAIN, None)[i % 3],
                ("critical",) if i % 10 == 0 else ("billing", "refunds"),
            )
            for idx in range(trials):
                store.add_trial(name, _trial(rng, case, idx))
        store.finish_run(name)


@dataclass(frozen=True)
class _Case:
    case_id: str
    rate: float
    suite: Suite
    expects: Expects | None
    tags: tuple[str, ...]


_HELD = ("orders.status == 'refunded'", "payments.count == 1", "emails.sent == 1", "x == 1")


def _trial(rng: random.Random, case: _Case, idx: int) -> TrialRecord:
    """One trial: passes at the case's rate; a few errors, unknowns, unsupported, vetoes."""
    passed = rng.random() < case.rate
    share = 1.0 if passed else rng.choice((0.0, 0.25, 0.5, 0.75))
    cut = int(share * len(_HELD))
    grades = [
        GradeRecord(
            "state",
            Verdict.PASS if passed else Verdict.FAIL,
            share,
            evidence=() if passed else (f"expected {_HELD[cut]}, found 0",),
            meta={"held": list(_HELD[:cut]), "failed": list(_HELD[cut:])},
        ),
        GradeRecord("rule", Verdict.PASS, 1.0, veto=True),
    ]
    verdict = Verdict.PASS if passed else Verdict.FAIL
    cause: Cause | None = None
    detail: tuple[str, ...] = ()
    guards: tuple[Guard, ...] = ()
    roll = rng.random()
    if roll < 0.02:
        verdict, cause, detail = Verdict.ERROR, Cause.AGENT, (f"KeyError: 'order_{idx % 7}'",)
    elif roll < 0.03:
        verdict, cause, guards = Verdict.ERROR, Cause.LIMIT, (Guard.TIMEOUT,)
        detail = ("the trial ran past its deadline (60 s)",)
    elif roll < 0.035:
        verdict, cause, detail = Verdict.ERROR, Cause.USER, ("the simulated user said nothing",)
    elif roll < 0.04:
        verdict = Verdict.UNSUPPORTED
        grades.append(GradeRecord("offline", Verdict.UNSUPPORTED, evidence=("unseen: lookup",)))
    elif roll < 0.05:
        verdict = Verdict.UNKNOWN
        judge = {"model": "judge-1", "dimension": "tone"}
        grades.append(GradeRecord("judge", Verdict.UNKNOWN, evidence=("cannot tell",), meta=judge))
    elif roll < 0.06 and not passed:
        veto = ("called forbidden tool delete_account",)
        grades[1] = GradeRecord("rule", Verdict.FAIL, 0.0, veto=True, evidence=veto)
    steps = rng.randint(2, 30)
    tokens_in = None if rng.random() < 0.01 else steps * rng.randint(300, 900)
    usage = TrialUsage(
        steps,
        tokens_in,
        steps * rng.randint(20, 200),
        rng.uniform(0.5, 30.0),
        round(steps * rng.uniform(0.0005, 0.004), 6),
        rng.uniform(0.6, 32.0),
    )
    selection = rng.choice((1.0, 0.5, None))
    tool_use = TrialToolUse(
        steps // 2, selection, rng.choice((1.0, 0.75)), None, int(rng.random() < 0.03)
    )
    return TrialRecord(
        case_id=case.case_id,
        idx=idx,
        suite=case.suite,
        verdict=verdict,
        score=share,
        cassette=f".replay/cassettes/{case.case_id}/{idx}.cassette",
        usage=usage,
        tags=case.tags,
        cause=cause,
        cause_detail=detail,
        tool_use=tool_use,
        guards=guards,
        grades=tuple(grades),
        expects=case.expects,
    )


def _measure(store: Path, name: str, args: tuple[str, ...], html: Path) -> Timing:
    argv = [a.replace("{html}", str(html)) for a in args]
    command = [sys.executable, "-c", _CLI, *argv, "--store", str(store)]
    wrapped = subprocess.run(
        [sys.executable, "-c", _WRAPPER, *command], capture_output=True, text=True, check=True
    )
    got = json.loads(wrapped.stdout)
    if got["rc"] not in (0, 1, 3):  # (a gate that does not hold exits 1 or 3: still timed)
        raise RuntimeError(f"{name} failed ({got['rc']}): {got['err']}")
    page = html.stat().st_size if "--html" in args and html.exists() else None
    return Timing(name, got["wall"], got["rss"], got["rc"], got["out"], page)


def run(
    quick: bool = False,
    *,
    smoke: bool = False,
    keep: Path | None = None,
    skip: tuple[str, ...] = (),
) -> Result:
    """Build the store (in a child process) and time each command on it.

    Args:
        quick: 200 cases x 50 trials instead of 1,000 x 100.
        smoke: 50 cases x 20 trials: that it runs.
        keep: Build the store there, or use the one already there (else a temporary one).
        skip: Commands not to time (by name: ``gate``...).
    """
    cases, trials = SMOKE if smoke else QUICK if quick else FULL
    with tempfile.TemporaryDirectory(prefix="bench-reports-") as tmp:
        path = keep if keep is not None else Path(tmp) / "results.db"
        t0 = time.perf_counter()
        if not path.exists():
            subprocess.run(
                [sys.executable, "-m", "bench.reports", "--build", str(path),
                 "--cases", str(cases), "--trials", str(trials)],
                check=True,
            )  # fmt: skip
        build_s = time.perf_counter() - t0
        html = Path(tmp) / "report.html"
        timings = [_measure(path, name, args, html) for name, args in COMMANDS if name not in skip]
        return Result(cases, trials, build_s, path.stat().st_size, timings)


def report(result: Result) -> str:
    """The table: each command's seconds, peak memory and output against the targets."""
    rows = []
    for t in result.timings:
        shown = mb(t.page) if t.page is not None else mb(t.output)
        ok = t.wall_s <= TARGET_S and t.rss <= TARGET_RSS
        ok = ok and (t.page is None or t.page <= TARGET_PAGE)
        rows.append([t.name, secs(t.wall_s), mb(t.rss), shown, str(t.rc), "ok" if ok else "MISSED"])
    title = (
        f"Reports of a {result.cases * result.trials:,}-trial run ({result.cases:,} cases x "
        f"{result.trials}; a store of two such runs, {mb(result.store_bytes)}, built in "
        f"{secs(result.build_s)}); targets <= {TARGET_S:g} s and {mb(TARGET_RSS)} each, "
        f"the HTML's first page <= {mb(TARGET_PAGE)}"
    )
    header = ["command", "wall", "peak RSS", "output / page", "exit", "target"]
    return table(title, header, rows)


def worst(result: Result) -> tuple[Timing, Timing]:
    """The slowest command and the one with the largest peak RSS."""
    return (
        max(result.timings, key=lambda t: t.wall_s),
        max(result.timings, key=lambda t: t.rss),
    )


def page(result: Result) -> int | None:
    """The HTML page's size, bytes (None: not measured)."""
    return next((t.page for t in result.timings if t.page is not None), None)


def main(argv: list[str] | None = None) -> None:
    """``python -m bench.reports [--quick]``."""
    parser = argparse.ArgumentParser(prog="python -m bench.reports", description=__doc__)
    parser.add_argument("--quick", action="store_true", help="200 cases x 50 trials")
    parser.add_argument("--store", type=Path, help="build the store here, or reuse it")
    parser.add_argument("--skip", action="append", default=[], help="a command not to time")
    parser.add_argument("--build", type=Path, help=argparse.SUPPRESS)
    parser.add_argument("--cases", type=int, default=FULL[0], help=argparse.SUPPRESS)
    parser.add_argument("--trials", type=int, default=FULL[1], help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.build is not None:
        build(args.build, args.cases, args.trials)
        return
    print(report(run(quick=args.quick, keep=args.store, skip=tuple(args.skip))))


if __name__ == "__main__":
    main()
