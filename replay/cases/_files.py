"""Files the harness writes for others to read (a case, a JUnit report): whole or not at all.

A CI job reads the JUnit file the gate wrote; a torn one (the gate killed mid-write)
could be misread as a verdict, and a torn case file fails every run that loads it. So
each is written beside its path under a temporary name, flushed to disk, and renamed
over it: a reader sees the file as it was, or the whole new one. (Here, below the
stages that write files; ``replay.results`` exports ``write_whole`` too.)

A writer killed mid-write (SIGKILL gives it no chance to clean up) leaves its
temporary file, ``.NAME.PID-HEX.part``; the next write of the same path removes
those whose writer is gone (its pid not running, and its lock on the file released).
"""

from __future__ import annotations

import contextlib
import fcntl
import glob
import os
import re
import secrets
from collections.abc import Iterator
from pathlib import Path


@contextlib.contextmanager
def replacing(path: Path, *, sweep: bool = True) -> Iterator[Path]:
    """A temporary file beside ``path`` (its folder made if missing) that becomes ``path``.

    Write the yielded file whole (a copy, a cassette); when the block ends, it is
    flushed to disk and renamed over ``path``. If the block raises, it is removed
    and ``path`` is left as it was. (A process killed meanwhile leaves at most a
    ``.NAME.*.part`` file beside it, removed by the next write of ``path``.)

    ``sweep=False`` skips that removal (a look through the whole folder): for a writer
    of many files in one folder, which calls ``sweep_parts`` on it once instead.
    """
    path.parent.mkdir(parents=True, exist_ok=True)
    if sweep:
        _sweep(path)
    while True:  # (not mkstemp: its files are 0600, these get the umask's mode as any other)
        tmp = path.with_name(f".{path.name}.{os.getpid()}-{secrets.token_hex(4)}.part")
        try:
            held = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o666)
            break
        except FileExistsError:
            continue
    try:
        with contextlib.suppress(OSError):  # (where locks are not kept, the pid alone tells)
            fcntl.flock(held, fcntl.LOCK_EX)  # ours while we live: see _sweep
        yield tmp
        with tmp.open("rb") as written:
            os.fsync(written.fileno())
        os.replace(tmp, path)
    except BaseException:
        tmp.unlink(missing_ok=True)
        raise
    finally:
        os.close(held)


def _sweep(path: Path) -> None:
    """Remove the temporary files of ``path`` whose writers died before renaming them.

    One is abandoned when the pid in its name runs no process here and nobody holds
    its lock (a writer in another pid namespace still does; a recycled pid only
    keeps a file a while longer). Names not made by ``replacing`` are left alone.
    """
    pattern = glob.escape(str(path.with_name(f".{path.name}."))) + "*.part"
    for stale in glob.glob(pattern):
        named = _PART.fullmatch(os.path.basename(stale))
        if named is not None and named["name"] == path.name:
            _remove_abandoned(stale, int(named["pid"]))


def sweep_parts(folder: Path) -> None:
    """Remove the temporary files in ``folder`` whose writers died, whatever each was to be.

    One look through the folder: a run writing thousands of cassettes there sweeps it
    once, not once a cassette.
    """
    try:
        names = os.listdir(folder)
    except OSError:
        return  # (no folder yet: nothing to sweep)
    for name in names:
        named = _PART.fullmatch(name)
        if named is not None:
            _remove_abandoned(os.path.join(folder, name), int(named["pid"]))


_PART = re.compile(r"\.(?P<name>.+)\.(?P<pid>[0-9]{1,9})-[0-9a-f]{8}\.part")
"""A temporary file ``replacing`` named: ``.NAME.PID-HEX.part``."""


def _remove_abandoned(stale: str, pid: int) -> None:
    """Remove ``stale`` if its writer (``pid``) is not running and holds no lock on it."""
    if not _running(pid):
        try:  # (not blocking on a FIFO, not following a link someone put there)
            fd = os.open(stale, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK)
        except OSError:
            return
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            os.unlink(stale)
        except OSError:
            pass  # held: its writer lives
        finally:
            os.close(fd)


def _running(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except OSError:
        return True  # someone else's
    return True


def write_whole(path: Path, data: str | bytes) -> None:
    """Write ``data`` to ``path`` (its folder made if missing) so that no reader sees part of it.

    (A process killed meanwhile leaves at most a ``.NAME.*.part`` file beside it, removed
    by the next write of ``path``.)
    """
    raw = data.encode("utf-8") if isinstance(data, str) else data
    with replacing(path) as tmp:
        tmp.write_bytes(raw)
