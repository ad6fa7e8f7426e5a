"""Open time and file size of a cassette of N LLM calls, ours vs vcrpy's YAML.

The same agent traffic (``bench._data``) is recorded twice, one after the
other (both patch ``httpx.MockTransport``): with ``recorder.record`` into
our cassette and with ``vcr.VCR().use_cassette(..., record_mode="all")``
into a YAML cassette. Then each is opened the way its library opens it:
``recorder.read_cassette`` (decode and validate every record) and vcrpy's
``Cassette.load`` with the config ``use_cassette`` builds (YAML parse, then
every interaction through the load hooks), which is what ``use_cassette``
does on entry. Last, the records of our cassette are re-encoded a few ways
to show what the encoding buys.

Run alone: ``python -m bench.cassette_open [--quick]``.
"""

from __future__ import annotations

import argparse
import gc
import random
import statistics
import tempfile
import time
import zlib
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import msgpack
import vcr
from vcr.cassette import Cassette as VcrCassette
from vcr.cassette import CassetteContextDecorator
from vcr.util import partition_dict

import recorder
from recorder import _codec
from recorder._streams import zstd

from . import _data
from ._report import mb, median_time, ratio, secs, table, timed

FULL_N, QUICK_N, SMOKE_N = 10_000, 1_000, 200
OPEN_TARGET_PER_CALL_S = 25e-6
"""Open a cassette in 25 us per call at most: 0.25 s for 10,000 calls."""
SIZE_TARGET_X = 20.0


@dataclass
class Encoding:
    """One way of encoding the cassette's records."""

    name: str
    size: int
    encode_s: float
    """Seconds to encode all records."""


@dataclass
class OpenResult:
    """Everything ``run`` measured."""

    n: int
    ours_size: int
    vcr_size: int
    ours_open: list[float]
    ours_decode: list[float]
    vcr_open: list[float]
    vcr_parse: list[float]
    ours_open_nogc: list[float]
    """Diagnostic: ``read_cassette`` with the cyclic GC paused."""
    ours_record_s: float
    vcr_record_s: float
    encodings: list[Encoding] = field(default_factory=list)
    window: list[tuple[int, float, float, float]] = field(default_factory=list)
    """(system prompt padding in KB, mean record KB, one stream / raw, each alone / raw)."""
    window_calls: int = 0
    notes: list[str] = field(default_factory=list)

    @property
    def ours_open_s(self) -> float:
        return statistics.median(self.ours_open)

    @property
    def vcr_open_s(self) -> float:
        return statistics.median(self.vcr_open)

    @property
    def size_ratio(self) -> float:
        return self.vcr_size / self.ours_size

    @property
    def open_ok(self) -> bool:
        return self.ours_open_s <= OPEN_TARGET_PER_CALL_S * self.n

    @property
    def size_ok(self) -> bool:
        return self.size_ratio >= SIZE_TARGET_X


def _vcr() -> vcr.VCR:
    # The authorization header is filtered, as anyone committing OpenAI cassettes does
    # (ours redacts it by default).
    return vcr.VCR(filter_headers=["authorization"])


def record_ours(path: Path, items: list[_data.Interaction]) -> float:
    """Record ``items`` into our cassette at ``path``; return the seconds taken."""

    def go() -> None:
        with recorder.record(path, case_id="bench", agent_version="bench"):
            _data.drive(items)

    return timed(go)[0]


def record_vcr(path: Path, items: list[_data.Interaction]) -> float:
    """Record ``items`` into a vcrpy YAML cassette at ``path``; return the seconds taken."""

    def go() -> None:
        with _vcr().use_cassette(str(path), record_mode="all", serializer="yaml"):
            _data.drive(items)

    return timed(go)[0]


def open_vcr(path: Path) -> VcrCassette:
    """Load a YAML cassette exactly as ``use_cassette(path)`` does on entry (minus patching)."""
    config = _vcr().get_merged_config(path=str(path), record_mode="none", serializer="yaml")
    _, kwargs = partition_dict(
        lambda key, _: key in CassetteContextDecorator._non_cassette_arguments, config
    )
    return VcrCassette.load(**kwargs)


def parse_vcr(path: Path) -> Any:
    """Only the YAML parse of vcrpy's load (its persister and serializer)."""
    from vcr.persisters.filesystem import FilesystemPersister
    from vcr.serializers import yamlserializer

    return FilesystemPersister.load_cassette(str(path), serializer=yamlserializer)


def _without_gc(fn: Callable[[], None]) -> Callable[[], None]:
    def call() -> None:
        was = gc.isenabled()
        gc.disable()
        try:
            fn()
        finally:
            if was:
                gc.enable()

    return call


def _per_record(records: list[bytes], compress: Callable[[bytes], bytes]) -> tuple[int, float]:
    t0 = time.perf_counter()
    size = sum(len(compress(r)) for r in records)
    return size, time.perf_counter() - t0


def _deflate_alone(raw: bytes) -> bytes:
    c = zlib.compressobj(6, zlib.DEFLATED, -15)
    return c.compress(raw) + c.flush()


def _shared_deflate(records: list[bytes], level: int) -> tuple[int, float]:
    t0 = time.perf_counter()
    c = zlib.compressobj(level, zlib.DEFLATED, -15)
    size = len(_codec.PREAMBLE)
    for raw in records:
        size += len(c.compress(raw)) + len(c.flush(zlib.Z_SYNC_FLUSH))
    size += len(c.flush(zlib.Z_FINISH))
    return size, time.perf_counter() - t0


def _encoder(records: list[dict[str, Any]], container: int) -> tuple[int, float]:
    t0 = time.perf_counter()
    enc = _codec.Encoder(container)
    size = len(enc.preamble()) + sum(len(enc.encode(r)) for r in records) + len(enc.finish())
    return size, time.perf_counter() - t0


def _zstd_level(records: list[bytes], level: int) -> tuple[int, float]:
    t0 = time.perf_counter()
    comp = zstd.ZstdCompressor(level=level)
    size = sum(len(comp.compress(r, zstd.ZstdCompressor.FLUSH_BLOCK)) for r in records)
    return size + len(comp.flush()), time.perf_counter() - t0


def encodings(path: Path, notes: list[str]) -> list[Encoding]:
    """Re-encode the records of our cassette at ``path`` a few ways; return the sizes."""
    records = _codec.decode(path.read_bytes()).records
    packed = [msgpack.packb(r, use_bin_type=True) for r in records]
    out = [Encoding("raw msgpack, no compression", sum(map(len, packed)), 0.0)]
    size, took = _per_record(packed, _deflate_alone)
    out.append(Encoding("deflate level 6, each record alone", size, took))
    size, took = _encoder(records, _codec.CONTAINER_ZSTD_MSGPACK)
    out.append(Encoding("zstd level 1, one stream (recorder._codec.Encoder: written)", size, took))
    if size != path.stat().st_size:
        notes.append(f"re-encoding gave {size} bytes, the file has {path.stat().st_size}")
    size, took = _encoder(records, _codec.CONTAINER_DEFLATE_MSGPACK)
    out.append(Encoding("deflate level 6, one stream (Encoder(DEFLATE): earlier)", size, took))
    for level in (1, 9):
        size, took = _shared_deflate(packed, level)
        out.append(Encoding(f"deflate level {level}, one stream", size, took))
    size, took = _zstd_level(packed, 3)
    out.append(Encoding("zstd level 3, one stream (no deltas)", size, took))
    return out


def window_sensitivity(
    path: Path, count: int, pads_kb: tuple[int, ...] = (0, 16, 40)
) -> list[tuple[int, float, float, float]]:
    """Compression of the first ``count`` calls with the system prompt grown by ``pads_kb``.

    Deflate matches only within the last 32 KB, so once one record outgrows
    that, the copy of the conversation in the previous record is out of reach.
    """
    records = [r for r in _codec.decode(path.read_bytes()).records if r.get("kind") == "http"]
    rng = random.Random(3)
    marker = b'"role":"system","content":"'
    out = []
    for pad_kb in pads_kb:
        pad = " ".join(rng.choices(_data.WORDS, k=pad_kb * 1024 // 7)).encode()
        enc = _codec.Encoder(_codec.CONTAINER_DEFLATE_MSGPACK)
        raw = shared = alone = 0
        for r in records[:count]:
            body = r["request"]["body"].replace(marker, marker + pad, 1)
            record = {**r, "request": {**r["request"], "body": body}}
            raw += len(msgpack.packb(record, use_bin_type=True))
            alone += len(_deflate_alone(msgpack.packb(record, use_bin_type=True)))
            shared += len(enc.encode(record))
        n = min(count, len(records))
        out.append((pad_kb, raw / n / 1024, shared / raw, alone / raw))
    return out


def run(quick: bool = False, workdir: Path | None = None, smoke: bool = False) -> OpenResult:
    """Generate, record both ways, measure sizes and open times (``smoke``: that it runs)."""
    n = SMOKE_N if smoke else QUICK_N if quick else FULL_N
    reps_ours, reps_vcr = (3, 1) if quick else (5, 2)
    with tempfile.TemporaryDirectory(prefix="agent-replay-bench-") as tmp:
        base = workdir or Path(tmp)
        items = list(_data.interactions(n))
        ours, theirs = base / "agent.cassette", base / "agent.yaml"
        ours_record_s = record_ours(ours, items)
        vcr_record_s = record_vcr(theirs, items)
        del items

        def read() -> None:
            events = recorder.read_cassette(ours).events  # (and the warning that no tool ran)
            got = sum(isinstance(e, recorder.HttpEvent) for e in events)
            assert got == n, f"our cassette holds {got} HTTP events, expected {n}"

        def decode_only() -> None:
            _codec.decode(ours.read_bytes())

        def load() -> None:
            got = len(open_vcr(theirs))
            assert got == n, f"vcrpy cassette holds {got} interactions, expected {n}"

        read()  # warm up (imports, pydantic validators)
        ours_open = [timed(read)[0] for _ in range(reps_ours)]
        ours_decode = [median_time(decode_only, reps_ours)]
        ours_open_nogc = [timed(_without_gc(read))[0] for _ in range(reps_ours)]
        vcr_open = [timed(load)[0] for _ in range(reps_vcr)]
        vcr_parse = [] if quick else [timed(lambda: parse_vcr(theirs))[0]]
        notes: list[str] = []
        result = OpenResult(
            n=n,
            ours_size=ours.stat().st_size,
            vcr_size=theirs.stat().st_size,
            ours_open=ours_open,
            ours_decode=ours_decode,
            vcr_open=vcr_open,
            vcr_parse=vcr_parse,
            ours_open_nogc=ours_open_nogc,
            ours_record_s=ours_record_s,
            vcr_record_s=vcr_record_s,
            notes=notes,
        )
        result.encodings = encodings(ours, notes)
        result.window_calls = min(n, 300 if quick else 2_000)
        result.window = window_sensitivity(ours, result.window_calls)
    return result


def report(r: OpenResult) -> str:
    """Render the result as tables."""
    ours_open, vcr_open = r.ours_open_s, r.vcr_open_s
    main = table(
        f"Cassette of {r.n:,} LLM calls: size and time to open",
        ["", "agent-replay", "vcrpy YAML", "vcrpy / ours", "target"],
        [
            [
                "file size",
                mb(r.ours_size),
                mb(r.vcr_size),
                ratio(r.vcr_size, r.ours_size),
                f">= {SIZE_TARGET_X:.0f}x  {'ok' if r.size_ok else 'MISSED':6}",
            ],
            [
                f"open, median of {len(r.ours_open)} / {len(r.vcr_open)}",
                secs(ours_open),
                secs(vcr_open),
                ratio(vcr_open, ours_open),
                f"<= {OPEN_TARGET_PER_CALL_S * r.n:.3g} s  {'ok' if r.open_ok else 'MISSED':6}",
            ],
            [
                "  of which decode / YAML parse",
                secs(r.ours_decode[0]),
                secs(r.vcr_parse[0]) if r.vcr_parse else "-",
                ratio(r.vcr_parse[0], r.ours_decode[0]) if r.vcr_parse else "",
                "",
            ],
            [
                "record (drive + write, once)",
                secs(r.ours_record_s),
                secs(r.vcr_record_s),
                ratio(r.vcr_record_s, r.ours_record_s),
                "",
            ],
        ],
    )
    raw = r.encodings[0].size
    enc = table(
        f"The same {r.n:,} records ({r.n + 2:,} with header and footer), encoded other ways",
        ["encoding", "size", "vs raw", "encode, all records", "per record"],
        [
            [
                e.name,
                mb(e.size),
                f"{e.size / raw:.1%}",
                secs(e.encode_s) if e.encode_s else "-",
                secs(e.encode_s / (r.n + 2)) if e.encode_s else "-",
            ]
            for e in r.encodings
        ],
    )
    win = table(
        f"Deflate's 32 KB window: the first {r.window_calls:,} calls, with the system prompt grown",
        ["system prompt +", "mean record", "one stream", "each record alone"],
        [
            [f"{pad} KB", f"{kb:.1f} KB", f"{one:.1%}", f"{each:.1%}"]
            for pad, kb, one, each in r.window
        ],
    )
    lines = [
        main,
        "  open = recorder.read_cassette (decode + validate every record) vs",
        "         vcr.cassette.Cassette.load with use_cassette's config (YAML parse + load hooks)",
        f"  diagnostic: read_cassette with the cyclic GC paused: "
        f"{secs(statistics.median(r.ours_open_nogc))} (median of {len(r.ours_open_nogc)})",
        "",
        enc,
        *(f"  note: {n}" for n in r.notes),
        "",
        win,
        "  (sizes as a share of raw msgpack; past 32 KB a record cannot reach the previous "
        "copy of the conversation)",
    ]
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> None:
    """Run this benchmark alone."""
    parser = argparse.ArgumentParser(prog="python -m bench.cassette_open", description=__doc__)
    parser.add_argument(
        "--quick", action="store_true", help=f"{QUICK_N:,} calls, fewer repetitions"
    )
    args = parser.parse_args(argv)
    print(report(run(quick=args.quick)))


if __name__ == "__main__":
    main()
