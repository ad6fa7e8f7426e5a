"""Append-only cassette writer: one ``os.write`` per record, nothing buffered in-process."""

from __future__ import annotations

import os
import threading
from collections.abc import Iterable
from pathlib import Path

from ._codec import Encoder
from ._errors import CassetteError
from ._schema import Footer, Header, _Record


class CassetteWriter:
    """Writes one cassette: a header, events, a footer.

    Every record is on disk (in the OS) when ``write`` returns, so a process
    killed at any point leaves every complete record readable.

    Args:
        path: Where to write.
        header: The first record.
        overwrite: Replace an existing file instead of refusing.
    """

    def __init__(self, path: str | Path, header: Header, *, overwrite: bool = False) -> None:
        self.path = Path(path)
        self._encoder = Encoder()
        self._lock = threading.Lock()
        flags = os.O_WRONLY | os.O_CREAT | os.O_APPEND | (os.O_TRUNC if overwrite else os.O_EXCL)
        self.path.parent.mkdir(parents=True, exist_ok=True)
        try:
            self._fd: int | None = os.open(self.path, flags, 0o644)
        except FileExistsError:
            raise CassetteError(
                "already exists; choose another path or pass overwrite=True", path=self.path
            ) from None
        # Preamble and header go out in one write, so a file is never left without a header
        # by anything short of a kill inside this one system call.
        self._put(self._encoder.preamble() + self._encoder.encode(_dump(header)))

    def _put(self, data: bytes) -> None:
        assert self._fd is not None
        view = memoryview(data)
        while view:
            view = view[os.write(self._fd, view) :]

    def write(self, record: _Record) -> None:
        """Append one record (an event or the footer)."""
        with self._lock:
            if self._fd is None:
                raise ValueError(f"{self.path}: cassette already closed")
            self._put(self._encoder.encode(_dump(record)))

    def close(self, footer: Footer | None) -> None:
        """Write the footer (if any), end the stream and close the file."""
        with self._lock:
            if self._fd is None:
                return
            try:
                tail = self._encoder.encode(_dump(footer)) if footer is not None else b""
                self._put(tail + self._encoder.finish())
            finally:
                os.close(self._fd)
                self._fd = None


def _dump(record: _Record) -> dict[str, object]:
    # None fields are left out (their default is None); `kind` is never None.
    return record.model_dump(mode="python", exclude_none=True)


def write_cassette(
    path: str | Path,
    header: Header,
    events: Iterable[_Record],
    footer: Footer | None,
    *,
    overwrite: bool = False,
) -> None:
    """Write a whole cassette at once (a copy, a rewrite, an import)."""
    writer = CassetteWriter(path, header, overwrite=overwrite)
    try:
        for event in events:
            writer.write(event)
    finally:
        writer.close(footer)
