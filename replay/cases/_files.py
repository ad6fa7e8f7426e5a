"""Files the harness writes for others to read (a case, a JUnit report): whole or not at all.

A CI job reads the JUnit file the gate wrote; a torn one (the gate killed mid-write)
could be misread as a verdict, and a torn case file fails every run that loads it. So
each is written beside its path under a temporary name, flushed to disk, and renamed
over it: a reader sees the file as it was, or the whole new one. (Here, below the
stages that write files; ``replay.results`` exports ``write_whole`` too.)
"""

from __future__ import annotations

import contextlib
import os
import secrets
from collections.abc import Iterator
from pathlib import Path


@contextlib.contextmanager
def replacing(path: Path) -> Iterator[Path]:
    """A temporary file beside ``path`` (its folder made if missing) that becomes ``path``.

    Write the yielded file whole (a copy, a cassette); when the block ends, it is
    flushed to disk and renamed over ``path``. If the block raises, it is removed
    and ``path`` is left as it was. (A process killed meanwhile leaves at most a
    ``.NAME.*.part`` file beside it.)
    """
    path.parent.mkdir(parents=True, exist_ok=True)
    while True:  # (not mkstemp: its files are 0600, these get the umask's mode as any other)
        tmp = path.with_name(f".{path.name}.{secrets.token_hex(4)}.part")
        try:
            os.close(os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o666))
            break
        except FileExistsError:
            continue
    try:
        yield tmp
        with tmp.open("rb") as written:
            os.fsync(written.fileno())
        os.replace(tmp, path)
    except BaseException:
        tmp.unlink(missing_ok=True)
        raise


def write_whole(path: Path, data: str | bytes) -> None:
    """Write ``data`` to ``path`` (its folder made if missing) so that no reader sees part of it.

    (A process killed meanwhile leaves at most a ``.NAME.*.part`` file beside it.)
    """
    raw = data.encode("utf-8") if isinstance(data, str) else data
    with replacing(path) as tmp:
        tmp.write_bytes(raw)
