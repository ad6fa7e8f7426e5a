"""Hostile cassettes: mutants of the committed ones through everything that reads a cassette.

Each mutant (``mutants``) is made from a cassette in ``cassettes/``: bytes
flipped, the file cut short, or one record's decoded value replaced (a
non-finite or out-of-range number, a value nested deeper than any reader
takes, rich markup, a map with bytes keys, a value of the wrong type, a JSON
body rewritten the same ways, a body that restores to gigabytes) and the
file encoded again with valid checksums, so the reader's own checks are
passed and what follows it is tested. ``exercise`` runs one mutant
through ``read_cassette``, ``replay show`` (text, ``--json``, ``--html``),
``replay grade``, ``replay diff`` against its original and offline playback
of the demo agent; a finding is anything but a ``ReplayError`` (a one-line
``error:`` and exit 2 from the command line).

``run`` spreads the mutants over worker processes; each run of a mutant is
timed, and a worker is replaced once its peak RSS passes the memory limit
(peak RSS only grows, so a worker that stays under it kept every run under
it); the limit is on the growth over the worker's warm state (``MEMORY_LIMIT_MB``).

First, unless ``-n`` is given, the bombs (``bench._bombs``): a cassette that
inflates 1000 times (one 1 GiB value; 1,024 records of 1 MiB; bodies restored by
delta) and a 50 MB case YAML, each refused in a fresh process, with the peak memory
refusing added (at most ``BOMB_LIMIT_MB``, 256) and the seconds it took (the YAML:
under 1 s).

Run alone: ``python -m bench.hostile [--quick] [-n COUNT] [--bombs]`` (the bombs, then
10,000 mutants; ``--quick``: 500; ``-n``: that many mutants, no bombs; ``--bombs``: only
the bombs).
"""

from __future__ import annotations

import argparse
import contextlib
import io
import math
import multiprocessing
import random
import resource
import shutil
import tempfile
import time
import traceback
import zlib
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import msgpack

from recorder import _codec, _streams

from . import _bombs

REPO = Path(__file__).resolve().parent.parent
ORIGINALS = sorted((REPO / "cassettes").rglob("*.cassette"))
CASE = REPO / "examples" / "shop" / "cases" / "refund-4812.yaml"
FULL_N, QUICK_N = 10_000, 500
TIME_LIMIT_S = 5.0
MEMORY_LIMIT_MB = 160
"""How far a mutant may raise a worker's peak RSS over its warm state: the worker after one
run of an unmutated cassette, every library loaded. So the bound is what hostile input costs,
whatever optional libraries the environment holds (with numpy installed, deepdiff loads it:
some 50 MB more for every worker, mutant or not)."""

MARKUP = ["[/red]", "[bold", "[/]", "[link=x]", "[red]x[/red", "\x1b[31m", "[[/]]"]
HUGE = [math.inf, -math.inf, math.nan, 2**64 - 1, 2**63, -(2**63), 10**18 * 9]


class Deep:
    """A value nested ``depth`` lists deep, spelled in msgpack directly (packb stops at 512)."""

    def __init__(self, depth: int) -> None:
        self.depth = depth
        self.marker = f"__deep_{depth}__"


def deep(depth: int, leaf: Any = 1) -> Any:
    """A value nested ``depth`` lists (and maps, alternately) deep."""
    if depth > 300:
        return Deep(depth).marker
    value = leaf
    for i in range(depth):
        value = [value] if i % 2 else {"k": value}
    return value


def _paths(value: Any) -> Iterator[tuple[Any, ...]]:
    """Paths into ``value`` (at most 12 deep)."""
    stack: list[tuple[Any, tuple[Any, ...]]] = [(value, ())]
    while stack:
        item, prefix = stack.pop()
        yield prefix
        if len(prefix) >= 12:
            continue
        if isinstance(item, dict):
            stack.extend((v, (*prefix, k)) for k, v in item.items())
        elif isinstance(item, list):
            stack.extend((v, (*prefix, i)) for i, v in enumerate(item[:50]))


def _get(value: Any, path: tuple[Any, ...]) -> Any:
    for p in path:
        value = value[p]
    return value


def _set(value: Any, path: tuple[Any, ...], new: Any) -> Any:
    if not path:
        return new
    _get(value, path[:-1])[path[-1]] = new
    return value


def _hostile_value(g: random.Random, old: Any) -> Any:
    choice = g.randrange(12)
    if choice == 0:
        return g.choice(HUGE)
    if choice == 1:
        return deep(g.choice([150, 600, 3000, 20000]))
    if choice == 2:
        return g.choice(MARKUP) + (old if isinstance(old, str) else "")
    if choice == 3:
        return {b"key": 1, "x": old}
    if choice == 4:
        return {1: old, 2.5: None}
    if choice == 5:
        return g.choice([None, [], {}, b"\xff\xfe", "", 0, -1, True, 1.5, "x" * 1000, [old]])
    if choice == 6:
        return [old] * g.choice([2, 100, 10_000])
    if choice == 7:
        return {f'col"; DROP TABLE orders; --{i}': old for i in range(2)}
    if choice == 8:
        return str(old) if not isinstance(old, str) else old.encode()
    if choice == 9:
        return {"k": old, "[/red]": "[bold]"}
    if choice == 10:
        return -(2**64) + 1 if g.random() < 0.5 else 2**64 - 1
    return g.choice(HUGE + MARKUP + [None, "", {}])


def _json_body(g: random.Random, body: bytes) -> bytes:
    """A JSON body with one value replaced by what JSON can spell (Infinity, depth, 1e999)."""
    import json

    try:
        doc = json.loads(body)
    except ValueError:
        return body
    choices = list(_paths(doc))
    path = g.choice(choices)
    kind = g.randrange(6)
    if kind == 0:
        text = g.choice(
            ["Infinity", "-Infinity", "NaN", "1e999", "18446744073709551615", "1" * 5000]
        )
        marker = "__HOSTILE__"
        doc = _set(doc, path, marker)
        return json.dumps(doc).replace(f'"{marker}"', text).encode()
    if kind == 1:
        depth = g.choice([200, 900, 5000, 50_000])
        doc = _set(doc, path, "__HOSTILE__")
        return json.dumps(doc).replace('"__HOSTILE__"', "[" * depth + "1" + "]" * depth).encode()
    if kind == 2:
        doc = _set(doc, path, g.choice(MARKUP))
    elif kind == 3:
        doc = _set(doc, path, g.choice([None, [], {}, 1, "x", True, -1]))
    elif kind == 4:
        doc = _set(doc, path, [_get(doc, path)] * 50)
    else:
        return body[: g.randrange(len(body) + 1)]
    return json.dumps(doc).encode()


def _encode(records: list[dict[str, Any]]) -> bytes:
    """Records as a cassette (checksums valid), encoding what msgpack can of them."""
    out = io.BytesIO()
    stream = _streams.compressor(_codec.CONTAINER_ZSTD_MSGPACK)
    out.write(_codec.PREAMBLE)
    for record in records:
        raw = msgpack.packb(record, use_bin_type=True, strict_types=False)
        for depth in (600, 3000, 20000):
            marker = msgpack.packb(Deep(depth).marker)
            raw = raw.replace(marker, b"\x91" * depth + b"\x01")
        out.write(stream.record(msgpack.packb(zlib.crc32(raw)) + raw))
    out.write(stream.finish())
    return out.getvalue()


def _bomb(records: list[dict[str, Any]], g: random.Random) -> list[dict[str, Any]]:
    """Request bodies restored by delta from one big body: gigabytes from kilobytes."""
    size = g.choice([1, 4, 16]) * 1024 * 1024
    http = next((r for r in records if r.get("kind") == "http"), None)
    if http is None:
        return records
    at = records.index(http)
    first = {**http, "request": {**http["request"], "body": b"\0" * size}}
    copies = [
        {**http, "request": {**http["request"], "body": [size, b"x", 0]}}
        for _ in range(g.choice([10, 300, 3000]))
    ]
    return [*records[:at], first, *copies, *records[at + 1 :]]


def _gzip_bomb(records: list[dict[str, Any]], g: random.Random) -> list[dict[str, Any]]:
    """A response body gzip-encoded from gigabytes of zeros (it recompresses well)."""
    http = [r for r in records if r.get("kind") == "http" and r.get("response")]
    if not http:
        return records
    target = g.choice(http)
    z = zlib.compressobj(9, zlib.DEFLATED, 16 + zlib.MAX_WBITS)
    chunk = b"\0" * (1 << 20)
    body = b"".join(z.compress(chunk) for _ in range(g.choice([16, 64]))) + z.flush()
    response = dict(target["response"])
    response["headers"] = [["content-encoding", "gzip"], *response["headers"]]
    response["chunks"] = [body]
    target["response"] = response
    return records


def mutant(seed: int) -> bytes:
    """The mutant numbered ``seed`` (the same bytes every time)."""
    g = random.Random(seed)
    data = g.choice(ORIGINALS).read_bytes()
    kind = g.randrange(10)
    if kind == 0:  # bytes flipped
        b = bytearray(data)
        for _ in range(g.choice([1, 2, 8])):
            b[g.randrange(len(b))] ^= 1 << g.randrange(8)
        return bytes(b)
    if kind == 1:  # cut short
        return data[: g.randrange(len(data))]
    records = [dict(r) for r in _codec.decode(data).records]
    if kind == 2:
        return _encode(_bomb(records, g))
    if kind == 3:
        return _encode(_gzip_bomb(records, g))
    for _ in range(g.choice([1, 1, 2, 3])):
        index = g.randrange(len(records))
        record = records[index]
        if kind in (4, 5) and record.get("kind") == "http":
            request = dict(record["request"])
            body = request.get("body")
            if isinstance(body, bytes) and g.random() < 0.5:
                request["body"] = _json_body(g, body)
                record["request"] = request
                continue
            response = record.get("response")
            if isinstance(response, dict) and response.get("chunks"):
                response = dict(response)
                joined = b"".join(response["chunks"])
                response["chunks"] = [_json_body(g, joined)]
                record["response"] = response
                continue
        path = g.choice(list(_paths(record))[1:] or [("t",)])
        if path[0] == "kind" and g.random() < 0.8:
            path = ("t",)
        try:
            old = _get(record, path)
        except (KeyError, IndexError, TypeError):
            old = None
        records[index] = _set(record, path, _hostile_value(g, old))
    try:
        return _encode(records)
    except (OverflowError, TypeError, ValueError, RecursionError):
        return _encode([records[0], {"kind": "warning", "t": 0.0, "message": "[/red]"}])


@dataclass
class Finding:
    """Something other than a project error, from one step of one mutant."""

    seed: int
    step: str
    what: str


_LAZY: dict[str, Any] = {}


def _setup() -> dict[str, Any]:
    if not _LAZY:
        from click.testing import CliRunner

        from examples.shop import agent, make_tools
        from replay import load_case
        from replay._cli.main import cli

        _LAZY.update(
            cli=cli, runner=CliRunner(), case=load_case(CASE), agent=agent, tools=make_tools
        )
    return _LAZY


def _cli(seed: int, step: str, args: list[str]) -> list[Finding]:
    s = _setup()
    result = s["runner"].invoke(s["cli"], args)
    if result.exception is not None and not isinstance(result.exception, SystemExit):
        tb = "".join(traceback.format_exception(result.exception))[-1500:]
        return [Finding(seed, step, tb)]
    if result.exit_code == 2:
        lines = result.stderr.strip().splitlines()
        if len(lines) != 1 or not lines[0].startswith("error: "):
            return [Finding(seed, step, f"not one error line: {result.stderr[-500:]!r}")]
    elif result.exit_code not in (0, 1):
        return [Finding(seed, step, f"exit {result.exit_code}: {result.output[-500:]!r}")]
    if "Traceback" in result.output:
        return [Finding(seed, step, result.output[-1500:])]
    return []


def exercise(seed: int, data: bytes, workdir: Path) -> list[Finding]:
    """Run one mutant through the reader, show, grade, diff and offline playback."""
    from recorder import ReplayError, read_cassette

    path = workdir / f"m{seed}.cassette"
    path.write_bytes(data)
    try:
        cassette = read_cassette(path)
    except ReplayError:
        return []  # refused by the reader: its one-line error is all anything sees
    except BaseException as exc:
        return [Finding(seed, "read", "".join(traceback.format_exception(exc))[-1500:])]
    found: list[Finding] = []
    p = str(path)
    found += _cli(seed, "show", ["show", p])
    found += _cli(seed, "show --bodies", ["show", "--bodies", p])
    found += _cli(seed, "show --json", ["show", "--json", p])
    found += _cli(seed, "show --html", ["show", p, "--html", str(workdir / "m.html")])
    found += _cli(seed, "grade", ["grade", p, "--case", str(CASE)])
    found += _cli(seed, "diff", ["diff", str(ORIGINALS[0]), p])
    found += _cli(seed, "diff --json", ["diff", p, str(ORIGINALS[0]), "--json"])
    found += _offline(seed, cassette, workdir)
    return found


def _offline(seed: int, cassette: Any, workdir: Path) -> list[Finding]:
    from recorder import ErrorEvent, ReplayError, read_cassette
    from replay.modes import offline

    s = _setup()
    out = workdir / f"o{seed}.cassette"
    try:
        with contextlib.redirect_stderr(io.StringIO()):
            result = offline(
                s["case"],
                s["agent"],
                s["tools"],
                cassette,
                out,
                llm_base_url="http://127.0.0.1:9/v1",
            )
    except ReplayError:
        return []
    except BaseException as exc:
        return [Finding(seed, "offline", "".join(traceback.format_exception(exc))[-1500:])]
    found = []
    # The agent may fail on a garbled reply (its own error, recorded); the harness may not.
    for event in read_cassette(result.cassette).events:
        if isinstance(event, ErrorEvent) and _ours(event.error.type, event.error.traceback or ""):
            found.append(Finding(seed, "offline", event.error.traceback or event.error.type))
    return found


def _ours(kind: str, tb: str) -> bool:
    """Whether an error is agent-replay's by accident: not a ReplayError, raised in its code."""
    if kind.startswith("recorder.") or kind.startswith("replay."):
        return False  # its errors on purpose (FixtureUnsupported...), all ReplayErrors
    frames = [line for line in tb.splitlines() if line.strip().startswith('File "')]
    if not frames:
        return False
    last = frames[-1]
    return "/recorder/" in last or "/replay/" in last


@dataclass
class Result:
    """What ``run`` found."""

    n: int
    findings: list[Finding] = field(default_factory=list)
    slow: list[tuple[int, float]] = field(default_factory=list)
    """Mutants over the time limit, with their seconds."""
    heavy: list[int] = field(default_factory=list)
    """Mutants after which a worker's peak RSS passed the memory limit."""
    max_s: float = 0.0
    peak_mb: float = 0.0
    """The largest growth of a worker's peak RSS over its warm state."""
    warm_mb: float = 0.0
    """The largest warm state: a worker's peak RSS after one unmutated cassette."""
    elapsed_s: float = 0.0
    refused: int = 0


def _peak_mb() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def _worker(seeds: list[int], queue: Any, inbox: Path) -> None:
    from recorder import ReplayError, read_cassette

    _setup()
    with tempfile.TemporaryDirectory() as tmp:
        workdir = Path(tmp)
        exercise(-1, ORIGINALS[0].read_bytes(), workdir)  # warm: every library loaded
        for f in workdir.iterdir():
            f.unlink()
        warm = _peak_mb()
        queue.put(("warm", -1, 0.0, warm, False, []))
        for seed in seeds:
            data = (inbox / f"{seed}.bin").read_bytes()  # made by the parent: not measured here
            queue.put(("start", seed, 0.0, 0.0, False, []))
            t0 = time.perf_counter()
            found = exercise(seed, data, workdir)
            took = time.perf_counter() - t0
            refused = False
            try:
                read_cassette(workdir / f"m{seed}.cassette")
            except ReplayError:
                refused = True
            for f in workdir.iterdir():
                f.unlink()
            queue.put(("done", seed, took, _peak_mb() - warm, refused, found))
            if _peak_mb() - warm > MEMORY_LIMIT_MB:
                return  # a fresh worker for the rest: peak RSS never goes down


def run(quick: bool = False, n: int | None = None, workers: int = 2) -> Result:
    """Run ``n`` mutants (10,000; 500 with ``quick``) over ``workers`` processes."""
    import queue as queues

    n = n if n is not None else (QUICK_N if quick else FULL_N)
    result = Result(n=n)
    t0 = time.perf_counter()
    ctx = multiprocessing.get_context("spawn")
    queue = ctx.Queue()
    pending = list(range(n))
    done: set[int] = set()
    running: dict[int, float] = {}  # seed -> when it started
    procs: list[tuple[Any, list[int]]] = []
    per = max(1, min(250, -(-n // workers)))

    inbox = Path(tempfile.mkdtemp(prefix="hostile-"))

    def start() -> None:
        batch, pending[:] = pending[:per], pending[per:]
        for seed in batch:
            try:
                data = mutant(seed)
            except Exception:  # a mutation msgpack cannot spell: a plain cut instead
                data = ORIGINALS[0].read_bytes()[: seed % 3000]
            (inbox / f"{seed}.bin").write_bytes(data)
        proc = ctx.Process(target=_worker, args=(batch, queue, inbox), daemon=True)
        proc.start()
        procs.append((proc, batch))

    while len(done) < n:
        while len(procs) < workers and pending:
            start()
        try:
            what, seed, took, peak, refused, found = queue.get(timeout=0.5)
        except queues.Empty:
            what = ""
        if what == "warm":
            result.warm_mb = max(result.warm_mb, peak)
        elif what == "start":
            running[seed] = time.perf_counter()
        elif what == "done":
            running.pop(seed, None)
            done.add(seed)
            result.findings += found
            result.refused += refused
            result.max_s = max(result.max_s, took)
            result.peak_mb = max(result.peak_mb, peak)
            if took > TIME_LIMIT_S:
                result.slow.append((seed, took))
            if peak > MEMORY_LIMIT_MB:
                result.heavy.append(seed)
        now = time.perf_counter()
        for proc, batch in list(procs):
            hung = [s for s in batch if s in running and now - running[s] > TIME_LIMIT_S * 6]
            if proc.is_alive() and not hung:
                continue
            if not proc.is_alive() and proc.exitcode == 0 and what:
                continue  # its last messages may still be queued: reap it when none are
            if proc.is_alive():
                proc.kill()
            proc.join()
            procs.remove((proc, batch))
            left = [s for s in batch if s not in done]
            if left and (hung or proc.exitcode != 0):
                culprit = left.pop(0)
                began = running.pop(culprit, now)
                done.add(culprit)
                if hung:
                    result.slow.append((culprit, now - began))
                result.findings.append(
                    Finding(culprit, "worker", f"worker died or hung (exit {proc.exitcode})")
                )
            pending[:0] = left
    for proc, _ in procs:
        proc.kill()
    shutil.rmtree(inbox, ignore_errors=True)
    result.elapsed_s = time.perf_counter() - t0
    return result


def report(r: Result) -> str:
    """The figures, one line each, and the first findings."""
    lines = [
        f"hostile cassettes: {r.n:,} mutants of {len(ORIGINALS)} committed cassettes "
        f"in {r.elapsed_s:.0f} s; {r.refused:,} refused by the reader",
        f"  findings (tracebacks, not one error line): {len(r.findings)}",
        f"  runs over {TIME_LIMIT_S:.0f} s: {len(r.slow)} (slowest {r.max_s:.2f} s)",
        f"  runs adding over {MEMORY_LIMIT_MB} MB to a warm worker's peak RSS: {len(r.heavy)} "
        f"(largest {r.peak_mb:.0f} MB over a warm {r.warm_mb:.0f} MB)",
    ]
    seen: set[str] = set()
    for f in r.findings:
        key = f.step + f.what.strip().splitlines()[-1][:120]
        if key in seen:
            continue
        seen.add(key)
        lines.append(f"  - seed {f.seed}, {f.step}: {f.what.strip()[-800:]}")
        if len(seen) >= 15:
            break
    return "\n".join(lines)


def ok(r: Result) -> bool:
    """Whether the issue's check holds: no finding, none slow, none heavy."""
    return not r.findings and not r.slow and not r.heavy


def main(argv: list[str] | None = None) -> None:
    """Run the mutants and print the figures."""
    parser = argparse.ArgumentParser(prog="python -m bench.hostile", description=__doc__)
    parser.add_argument("--quick", action="store_true")
    parser.add_argument("-n", type=int, default=None, help="run this many mutants (no bombs)")
    parser.add_argument("--seed", type=int, default=None, help="run one mutant here, verbosely")
    parser.add_argument("--bombs", action="store_true", help="refuse the bombs only (no mutants)")
    args = parser.parse_args(argv)
    if args.seed is not None:
        with tempfile.TemporaryDirectory() as tmp:
            for f in exercise(args.seed, mutant(args.seed), Path(tmp)):
                print(f.step, f.what)
        return
    fine = True
    if args.n is None:
        refusals = _bombs.run()
        print(_bombs.report(refusals), flush=True)
        fine = all(_bombs.ok(r) for r in refusals)
    if not args.bombs:
        result = run(quick=args.quick, n=args.n)
        print(report(result))
        fine = fine and ok(result)
    if not fine:
        raise SystemExit(1)


_: Callable[..., Any] = main

if __name__ == "__main__":
    main()
