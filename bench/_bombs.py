"""Bombs: files small on disk that would be huge in memory, and what refusing each costs.

A cassette bomb is a valid cassette (checksums right) whose stream inflates about
1000 times: one value of 1 GiB of zeros; 1,024 records of 1 MiB each; 8 of 31 MiB
(each just under the most one record may take); request bodies restored by delta
from one 16 MiB body. A case bomb is a plain 50 MB case
YAML. Each is refused in a fresh child process, which reports the growth of its
peak RSS (``ru_maxrss``) over its warm state (libraries loaded, one committed
cassette read) and the seconds refusing took: the bound is what refusing costs,
not the interpreter.
"""

from __future__ import annotations

import contextlib
import json
import resource
import subprocess
import sys
import tempfile
import time
import zlib
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import msgpack

from recorder import _codec
from recorder._streams import zstd

REPO = Path(__file__).resolve().parent.parent
ORIGINAL = REPO / "cassettes" / "refund-4812.cassette"
BOMB_LIMIT_MB = 256
"""What refusing a cassette bomb may add to a process's peak memory (issue 29)."""
YAML_LIMIT_S = 1.0
"""How long refusing a 50 MB case file may take (issue 29)."""
CHILD_TIMEOUT_S = 120
_ZSTD = _codec.CONTAINER_ZSTD_MSGPACK
_ZEROS = b"\0" * (1 << 20)


def _zeros(size: int) -> Iterator[bytes]:
    for at in range(0, size, len(_ZEROS)):
        yield _ZEROS[: min(len(_ZEROS), size - at)]


def tool_record(size: int) -> list[bytes | int]:
    """A tool record whose result is ``size`` zero bytes: its msgpack bytes, zeros as a count."""
    marker = msgpack.packb(b"MARK")
    packed = msgpack.packb(
        {"kind": "tool", "t": 0.0, "name": "bomb", "args": {}, "effect": "read", "result": b"MARK"}
    )
    head, tail = packed.split(marker)
    return [head + b"\xc6" + size.to_bytes(4, "big"), size, tail]


def cassette(records: Iterable[list[bytes | int]], container: int = _ZSTD) -> bytes:
    """A cassette of records, each given as its msgpack bytes with runs of zeros as counts.

    Zstandard by default, as recordings write; ``CONTAINER_DEFLATE_MSGPACK``: as earlier
    versions wrote (about 1,000 to 1 where zstd reaches 30,000 to 1).
    """
    out = [_codec.MAGIC + bytes([container])]
    stream = _Stream(container)
    for parts in records:
        pieces = [[p] if isinstance(p, bytes) else list(_zeros(p)) for p in parts]
        crc = 0
        for chunk in (c for group in pieces for c in group):
            crc = zlib.crc32(chunk, crc)
        out.append(stream.put(msgpack.packb(crc)))
        out.extend(stream.put(c) for group in pieces for c in group)
        out.append(stream.flush())
    out.append(stream.finish())
    return b"".join(out)


class _Stream:
    """Compress piece by piece, flushing at each record's end (as a recording does)."""

    def __init__(self, container: int) -> None:
        self._zstd = container == _codec.CONTAINER_ZSTD_MSGPACK
        self._z = zstd.ZstdCompressor(level=19) if self._zstd else None
        self._deflate = zlib.compressobj(9, zlib.DEFLATED, -15)

    def put(self, data: bytes) -> bytes:
        return self._z.compress(data) if self._z is not None else self._deflate.compress(data)

    def flush(self) -> bytes:
        if self._z is not None:
            return self._z.flush(zstd.ZstdCompressor.FLUSH_BLOCK)
        return self._deflate.flush(zlib.Z_SYNC_FLUSH)

    def finish(self) -> bytes:
        if self._z is not None:
            return self._z.flush(zstd.ZstdCompressor.FLUSH_FRAME)
        return self._deflate.flush(zlib.Z_FINISH)


def header() -> list[bytes | int]:
    """The committed cassette's header record."""
    return [msgpack.packb(_codec.decode(ORIGINAL.read_bytes()).records[0], use_bin_type=True)]


def one_value(size: int = 1 << 30, container: int = _ZSTD) -> bytes:
    """A header, then one record holding ``size`` zero bytes (1 GiB from about 1 MB)."""
    return cassette([header(), tool_record(size)], container)


def many_records(count: int = 1024, size: int = 1 << 20, container: int = _ZSTD) -> bytes:
    """A header, then ``count`` records of ``size`` zero bytes each, every one under any cap."""
    return cassette([header(), *(tool_record(size) for _ in range(count))], container)


def delta_bodies(copies: int = 3000, size: int = 16 << 20, container: int = _ZSTD) -> bytes:
    """Request bodies restored by delta from one ``size``-byte body: gigabytes from kilobytes."""
    records = _codec.decode(ORIGINAL.read_bytes()).records
    http = next(r for r in records if r.get("kind") == "http")
    first = {**http, "request": {**http["request"], "body": b"\0" * size}}
    copy = {**http, "request": {**http["request"], "body": [size, b"x", 0]}}
    packed: list[list[bytes | int]] = [
        [msgpack.packb(r, use_bin_type=True)] for r in (records[0], first, copy)
    ]
    return cassette([packed[0], packed[1], *(packed[2] for _ in range(copies))], container)


def case_yaml(size: int = 50 << 20) -> bytes:
    """A plain case file of ``size`` bytes: an id, an instruction, then assertion on assertion."""
    head = b"id: big\ninstruction: refund order 4812\nfixture: fixture.sql\nassert:\n"
    line = b'  - "orders.count(status=\\"refunded\\") == 1"\n'
    return head + line * ((size - len(head)) // len(line) + 1)


@dataclass(frozen=True)
class Refusal:
    """What refusing one bomb cost, measured in a child process."""

    name: str
    file_bytes: int
    refused: bool
    seconds: float
    grown_mb: float
    """Growth of the child's peak RSS over its warm state."""
    said: str


def _peak_mb() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def child(kind: str, path: str) -> dict[str, Any]:
    """Refuse the file at ``path`` here (``cassette`` or ``case``): the figures, as JSON data."""
    from recorder import ReplayError, read_cassette
    from replay.cases import load_case

    read_cassette(ORIGINAL)  # warm: the reader, pydantic's validators
    with contextlib.suppress(ReplayError):
        load_case(REPO / "examples" / "shop" / "cases" / "refund-4812.yaml")
    warm = _peak_mb()
    t0 = time.perf_counter()
    said, refused = "accepted", False
    try:
        if kind == "case":
            load_case(path)
        else:
            read_cassette(path)
    except ReplayError as exc:
        said, refused = str(exc), True
    took = time.perf_counter() - t0
    return {"refused": refused, "seconds": took, "grown_mb": _peak_mb() - warm, "said": said}


def measure(name: str, kind: str, data: bytes, suffix: str) -> Refusal:
    """Write ``data`` to a file and refuse it in a fresh child process."""
    with tempfile.TemporaryDirectory(prefix="agent-replay-bomb-") as tmp:
        path = Path(tmp) / f"bomb{suffix}"
        path.write_bytes(data)
        code = (
            f"import json, bench._bombs as b; print(json.dumps(b.child({kind!r}, {str(path)!r})))"
        )
        try:
            proc = subprocess.run(
                [sys.executable, "-c", code],
                cwd=REPO,
                capture_output=True,
                text=True,
                timeout=CHILD_TIMEOUT_S,
            )
        except subprocess.TimeoutExpired:
            said = f"not refused within {CHILD_TIMEOUT_S} s (killed)"
            return Refusal(name, len(data), False, CHILD_TIMEOUT_S, float("nan"), said)
    if proc.returncode != 0 or not proc.stdout.strip():
        said = f"child failed (exit {proc.returncode}): {proc.stderr.strip()[-300:]}"
        return Refusal(name, len(data), False, float("nan"), float("nan"), said)
    got = json.loads(proc.stdout.strip().splitlines()[-1])
    return Refusal(name, len(data), got["refused"], got["seconds"], got["grown_mb"], got["said"])


def run() -> list[Refusal]:
    """Refuse each bomb in a child process of its own."""
    return [
        measure("cassette: one 1 GiB value", "cassette", one_value(), ".cassette"),
        measure("cassette: 1,024 records of 1 MiB", "cassette", many_records(), ".cassette"),
        measure(
            "cassette: 8 records of 31 MiB",
            "cassette",
            many_records(8, 31 << 20),
            ".cassette",
        ),
        measure("cassette: 3,000 restored 16 MiB bodies", "cassette", delta_bodies(), ".cassette"),
        measure("case: a 50 MB YAML file", "case", case_yaml(), ".yaml"),
    ]


def ok(r: Refusal) -> bool:
    """Whether a refusal is within the issue's bounds."""
    if not r.refused:
        return False
    if r.name.startswith("case"):
        return r.seconds < YAML_LIMIT_S
    return r.grown_mb <= BOMB_LIMIT_MB


def report(results: list[Refusal]) -> str:
    """One line per bomb: size on disk, refused or not, seconds, peak memory added."""
    lines = [
        f"bombs refused (each in a fresh process; cassettes within {BOMB_LIMIT_MB} MB of "
        f"peak memory, a case file within {YAML_LIMIT_S:.0f} s):"
    ]
    for r in results:
        verdict = "refused" if r.refused else "NOT refused"
        mark = "ok" if ok(r) else "OVER"
        lines.append(
            f"  {r.name:<40} {r.file_bytes / 1e6:7.2f} MB file  {verdict} in {r.seconds:6.2f} s, "
            f"+{r.grown_mb:.0f} MB peak  {mark}"
        )
        lines.append(f"    {r.said[:200]}")
    return "\n".join(lines)
