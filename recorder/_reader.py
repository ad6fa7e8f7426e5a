"""Reading cassettes: version gate first, complete records kept, a cut tail reported."""

from __future__ import annotations

import gc
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from pydantic import ValidationError

from ._codec import DecodeError, decode_first, decode_leading, records
from ._derive import footer_for
from ._errors import (
    CassetteCorrupt,
    CassetteError,
    CassetteNotFound,
    CassetteVersionUnsupported,
)
from ._manifest import Captured, manifest
from ._schema import (
    READABLE_VERSIONS,
    RECORD_ADAPTER,
    Event,
    Footer,
    Header,
    Pins,
)


@dataclass(frozen=True, slots=True)
class Cassette:
    """A cassette read back: header, events in order, and the footer if it was written."""

    path: Path
    header: Header
    events: list[Event]
    footer: Footer | None
    truncation: str | None
    """Why the cassette is incomplete (no footer or a cut record), or None if complete."""

    @property
    def complete(self) -> bool:
        """Whether the recording was closed properly."""
        return self.truncation is None

    def summary(self) -> Footer:
        """Return the footer, or for a cut cassette, one derived from the events it kept."""
        if self.footer is not None:
            return self.footer
        return footer_for(
            self.events,
            base_pins=self.header.pins,
            status="error",
            total=max((e.t + getattr(e, "duration", 0.0) for e in self.events), default=0.0),
            final_answer=None,
            world_attached=self.header.fixture_hash is not None,
        )

    @property
    def pins(self) -> Pins:
        """Complete pins: the footer's, or derived from the events of a cut cassette."""
        return self.summary().pins

    def manifest(self) -> list[Captured]:
        """What the recording captured, per channel (LLM, HTTP, tools, MCP, user, world)."""
        return manifest(self)


def read_cassette(path: str | Path) -> Cassette:
    """Read a cassette file.

    A cassette cut short (a killed process) reads back every complete record
    and says so in ``truncation``; it never raises for that.

    What it returns, every reader after it can take: a record holding values
    nested more than 100 deep, a non-finite float, an integer beyond 64 bits
    or a non-string map key is refused, and so is a file that decompresses
    (request bodies restored included) to more than 1000 times its size or
    128 MiB, a record longer than 32 MiB, or a gzip/deflate response inflating
    past 100 times its size or 32 MiB (see ``recorder._bounds``). Decoding is
    streamed: a refused file is refused at the step that passes a cap, having
    held no more than the caps.

    Raises:
        CassetteNotFound: No file at ``path``.
        CassetteCorrupt: The file is not a cassette or its content is damaged.
        CassetteVersionUnsupported: The file's format version is unknown here.
    """
    # Decoding builds hundreds of thousands of containers, none of them cyclic garbage:
    # the cyclic collector would otherwise run dozens of times over the growing heap and
    # double the time. Only paused, though, its first run after the read would go over
    # every object built, from memory (1,000 calls: 51,000, 20 ms), so ``_read`` runs it
    # itself every few records, over what they built while it is still in the CPU's caches.
    enabled = gc.isenabled()
    gc.disable()
    try:
        return _read(Path(path), collect=enabled)
    finally:
        if enabled:
            gc.enable()


def read_header(path: str | Path) -> Header:
    """Read only a cassette's header (what it records, its pins): its events stay unread.

    Raises:
        CassetteError: As ``read_cassette`` does, for the header.
    """
    path = Path(path)
    try:
        first = decode_first(_bytes(path))
    except DecodeError as exc:
        raise CassetteCorrupt(str(exc), path=path) from None
    if first is None:
        raise CassetteCorrupt(_NO_HEADER, path=path)
    return _header(first, path)


def holds_events(path: str | Path) -> bool:
    """Whether a cassette holds any event, reading its header and at most one record more.

    False for a recording of nothing: the header, then the footer or the end of the file.

    Raises:
        CassetteError: As ``read_cassette`` does, for the header.
    """
    path = Path(path)
    try:
        leading = decode_leading(_bytes(path), 2)
    except DecodeError as exc:
        raise CassetteCorrupt(str(exc), path=path) from None
    if not leading:
        raise CassetteCorrupt(_NO_HEADER, path=path)
    _header(leading[0], path)
    return len(leading) > 1 and leading[1].get("kind") != "footer"


_NO_HEADER = "holds no complete header: the recording was cut before it started"


def _bytes(path: Path) -> bytes:
    try:
        return path.read_bytes()
    except FileNotFoundError:
        raise CassetteNotFound(path=path) from None
    except IsADirectoryError:
        raise CassetteCorrupt("is a directory, not a cassette file", path=path) from None


def _header(first: dict[str, Any], path: Path) -> Header:
    if first.get("kind") != "header":
        raise CassetteCorrupt("does not start with a header record", path=path)
    version = first.get("version")
    if version not in READABLE_VERSIONS:
        raise CassetteVersionUnsupported(
            path=path,
            version=version if isinstance(version, int) else -1,
            supported=READABLE_VERSIONS,
        )
    try:
        return Header.model_validate(first)
    except ValidationError as exc:
        raise CassetteCorrupt(_invalid(0, exc), path=path) from None


def _invalid(index: int, exc: ValidationError) -> str:
    err = exc.errors()[0]
    where = ".".join(str(p) for p in err["loc"])
    return f"record {index} is invalid: {where}: {err['msg']}"


_COLLECT_EVERY = 8
"""Records between two runs of the cyclic collector while reading (a power of 2)."""


def _read(path: Path, *, collect: bool = False) -> Cassette:
    # Each record is validated as soon as it is decoded and its raw form freed, both while
    # its objects are still in the CPU's caches (decoding every record, then validating
    # the list and freeing it took 10-15% longer). As when the file was decoded whole
    # first, damage anywhere in it is what a read reports, else the first record found
    # wrong: its error waits while the rest is decoded (not validated).
    # With ``collect`` (see ``read_cassette``), the two younger generations are collected
    # every few records: that untracks the header tuples (three objects in four built) and
    # moves the rest to the oldest generation, each object gone over once, in the caches.
    mask = _COLLECT_EVERY - 1
    data = _bytes(path)
    header: Header | None = None
    events: list[Event] = []
    append = events.append
    footer: Footer | None = None
    wrong: CassetteError | None = None
    # The schema's own validator: TypeAdapter.validate_python's wrapper cost as much again
    # per record as the validation itself.
    validate = RECORD_ADAPTER.validator.validate_python
    try:
        stream = records(data)
        for index, raw in enumerate(stream):
            if wrong is not None:
                continue
            try:
                if header is None:
                    header = _header(raw, path)  # the kind and version gate, before the rest
                    continue
                record = validate(raw)
                if footer is not None:
                    raise CassetteCorrupt(f"record {index} follows the footer", path=path)
                if isinstance(record, Footer):
                    footer = record
                elif isinstance(record, Header):
                    raise CassetteCorrupt(f"record {index} is a second header", path=path)
                else:
                    append(record)
                if collect and not index & mask:
                    gc.collect(1)
            except ValidationError as exc:
                wrong = CassetteCorrupt(_invalid(index, exc), path=path)
            except CassetteError as exc:
                wrong = exc
    except DecodeError as exc:
        raise CassetteCorrupt(str(exc), path=path) from None
    if wrong is not None:
        raise wrong from None
    if header is None:
        raise CassetteCorrupt(_NO_HEADER, path=path)
    truncation = None
    if footer is None:
        cut = f" and a cut record of {stream.tail_bytes} bytes" if stream.tail_bytes else ""
        truncation = (
            f"recording was cut short: {len(events)} complete events{cut}, no footer "
            "(the process was killed or crashed)"
        )
    return Cassette(path=path, header=header, events=events, footer=footer, truncation=truncation)
