"""Files the harness writes for others to read (a JUnit report, an HTML page): whole or not at all.

A CI job reads the JUnit file the gate wrote; a torn one (the gate killed mid-write)
could be misread as a verdict. So each is written beside its path under a temporary
name, flushed to disk, and renamed over it: a reader sees the file as it was, or
the whole new one.
"""

from __future__ import annotations

import os
import tempfile
from pathlib import Path


def write_whole(path: Path, data: str | bytes) -> None:
    """Write ``data`` to ``path`` (its folder made if missing) so that no reader sees part of it.

    (A process killed meanwhile leaves at most a ``.NAME.*.part`` file beside it.)
    """
    path.parent.mkdir(parents=True, exist_ok=True)
    raw = data.encode("utf-8") if isinstance(data, str) else data
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".part", dir=path.parent)
    try:
        with os.fdopen(fd, "wb") as out:
            out.write(raw)
            out.flush()
            os.fsync(out.fileno())
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
