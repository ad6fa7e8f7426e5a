"""Append-only cassette writer: one ``os.write`` per record, nothing buffered in-process."""

from __future__ import annotations

import contextlib
import ctypes
import ctypes.util
import errno
import os
import threading
from collections.abc import Callable, Iterable
from pathlib import Path

from ._codec import Encoder
from ._errors import CassetteError
from ._schema import Footer, Header, _Record

ROOM = 16 * 1024
"""Bytes kept allocated past a cassette's end while it is written (where the disk allows),
so that the footer and the note of a recording stopped by a full disk still fit."""

_KEEP_SIZE = 1  # FALLOC_FL_KEEP_SIZE: allocate past the end without moving it


def _fallocate() -> Callable[[int, int, int, int], int] | None:
    """Linux ``fallocate(2)``, when libc has it (``os.posix_fallocate`` moves the end)."""
    try:
        libc = ctypes.CDLL(ctypes.util.find_library("c"), use_errno=True)
        call = libc.fallocate
    except (OSError, AttributeError):
        return None
    call.argtypes = [ctypes.c_int, ctypes.c_int, ctypes.c_int64, ctypes.c_int64]
    call.restype = ctypes.c_int
    return call


_FALLOCATE = _fallocate()


class NoRoom(OSError):
    """The disk cannot keep room for more records (the last one written is complete)."""


class CassetteWriter:
    """Writes one cassette: a header, events, a footer.

    Every record is on disk (in the OS) when ``write`` returns, so a process
    killed at any point leaves every complete record readable. A record whose
    bytes do not all reach the file (a full disk, an I/O error) is taken back:
    the file ends on the last complete record, and the writer can still add
    records (a footer) after it.

    Args:
        path: Where to write.
        header: The first record.
        overwrite: Replace an existing file instead of refusing.
    """

    def __init__(self, path: str | Path, header: Header, *, overwrite: bool = False) -> None:
        self.path = Path(path)
        self._encoder = Encoder()
        self._lock = threading.Lock()
        self._size = 0
        """Bytes in the file, up to the end of its last complete record."""
        self._kept = 0
        """Bytes allocated past the end by ``keep_room`` (to give back at close)."""
        self._kept_at = 0
        """The file's size when that room was last kept."""
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
        try:
            self._put(self._encoder.preamble() + self._encoder.encode(_dump(header)))
        except BaseException:  # no header: leave no file that looks like a cassette
            os.close(self._fd)
            self._fd = None
            with contextlib.suppress(OSError):
                self.path.unlink()
            raise

    def _put(self, data: bytes) -> None:
        """Append ``data`` whole, or take back what reached the file and raise."""
        assert self._fd is not None
        view = memoryview(data)
        try:
            while view:
                view = view[os.write(self._fd, view) :]
        except OSError:
            if len(view) < len(data):  # part of it is in the file: cut it off again
                with contextlib.suppress(OSError):  # else the reader reports a cut record
                    os.ftruncate(self._fd, self._size)
            self._encoder = self._encoder.resume()  # its stream has the record, the file not
            raise
        self._size += len(data)

    def write(self, record: _Record) -> None:
        """Append one record (an event or the footer).

        Raises:
            OSError: Its bytes could not all be written (the file ends on the record
                before it).
            NoRoom: It was written, but the disk cannot keep room for more.
            TypeError, ValueError, OverflowError: It cannot be encoded (nothing written).
        """
        with self._lock:
            if self._fd is None:
                raise ValueError(f"{self.path}: cassette already closed")
            self._put(self._encoder.encode(_dump(record)))

    def keep_room(self) -> None:
        """Keep ``ROOM`` bytes allocated past the end where it can; check the disk is not full.

        Called after each record, so a disk that fills shows at the next record, while
        there is still room for a footer, rather than in the middle of one. The room is
        kept again once a quarter of it has been written over (at least 12 KB stay
        allocated: a footer takes about 1 KB); the disk is looked at after every record.

        Raises:
            NoRoom: The disk is full (every record so far is written).
        """
        with self._lock:
            if self._fd is None:
                return
            kept = self._kept > 0 and self._size - self._kept_at < ROOM // 4
            if _FALLOCATE is not None and self._kept >= 0 and not kept:
                if _FALLOCATE(self._fd, _KEEP_SIZE, self._size, ROOM) == 0:
                    self._kept, self._kept_at = ROOM, self._size
                else:
                    code = ctypes.get_errno()
                    if code in (errno.ENOSPC, errno.EDQUOT):
                        raise NoRoom(code, f"{os.strerror(code)} (no room left for the footer)")
                    if self._kept == 0:
                        self._kept = -1  # not supported here (EOPNOTSUPP...): do without
            try:
                disk = os.fstatvfs(self._fd)
            except OSError:
                return
            full = disk.f_blocks > 0 and disk.f_bavail == 0  # (some file systems report no size)
            if full:
                raise NoRoom(errno.ENOSPC, f"{os.strerror(errno.ENOSPC)} (the disk is full)")

    def removed(self) -> bool:
        """Whether the file was removed (or its folder) while it was being written."""
        with self._lock:
            if self._fd is None:
                return False
            try:
                return os.fstat(self._fd).st_nlink == 0
            except OSError:
                return True

    def close(self, footer: Footer | None) -> None:
        """Write the footer (if any), end the stream and close the file.

        The room kept past the end is given back. If the footer cannot be written
        the file still ends on its last complete event (a reader reports it cut
        short), and the error is raised.
        """
        with self._lock:
            if self._fd is None:
                return
            try:
                tail = self._encoder.encode(_dump(footer)) if footer is not None else b""
                self._put(tail + self._encoder.finish())
            finally:
                try:
                    if self._kept > 0:
                        os.ftruncate(self._fd, self._size)  # frees the blocks past the end
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
