"""The Ray backend: one threaded actor per worker, fixtures and shipped code in the object store."""

from __future__ import annotations

import io
import math
import os
import sys
import tempfile
import time
import zipfile
from collections.abc import Callable, Mapping
from concurrent.futures import Future
from pathlib import Path
from typing import TYPE_CHECKING, Any

from recorder import ConfigError

from ._backend import Backend
from ._processes import start_worker
from ._work import Blob, Done, Work, run_work

if TYPE_CHECKING:
    from ._spec import RunSpec


RAY_OBJECT_STORE = 256 * 1024 * 1024
"""Object store bytes for a Ray cluster started here (small: fixtures and cassettes)."""
PING_S = 30.0
"""Seconds an actor may take to answer a ping after a crash before it is replaced."""


def pack(folder: str) -> bytes:
    """A folder of code as zip bytes (``__pycache__`` and dot-entries left out)."""
    buffer = io.BytesIO()
    root = Path(folder)
    with zipfile.ZipFile(buffer, "w", zipfile.ZIP_DEFLATED) as archive:
        for path in sorted(root.rglob("*")):
            parts = path.relative_to(root).parts
            if path.is_file() and not any(p.startswith(".") or p == "__pycache__" for p in parts):
                archive.write(path, path.relative_to(root).as_posix())
    return buffer.getvalue()


def unpack(code: bytes) -> str:
    """Unpack shipped code into a fresh folder and put it first on the import path."""
    folder = tempfile.mkdtemp(prefix="replay-code-")
    with zipfile.ZipFile(io.BytesIO(code)) as archive:
        archive.extractall(folder)
    sys.path.insert(0, folder)
    return folder


class _RayWorker:
    """A Ray actor running trials (threaded: ``max_concurrency`` calls at once)."""

    def __init__(self, blobs: Mapping[str, Blob], code: bytes | None) -> None:
        if code is not None:
            unpack(code)
        start_worker([], blobs)  # (the driver's import path means nothing on a cluster)

    def run(self, work: Work) -> list[Done]:
        return run_work(work)

    def ping(self) -> int:
        """The actor's process id: it is alive (``OnRay.restart``)."""
        return os.getpid()


class OnRay(Backend):
    """Threaded Ray actors, one per worker."""

    def __init__(self, spec: RunSpec, blobs: Mapping[str, Blob]) -> None:
        try:
            import ray
        except ImportError:
            raise ConfigError(
                "`executor.kind=ray` needs Ray: pip install 'agent-replay[ray]'"
            ) from None
        self._ray = ray
        self._started = False
        if not ray.is_initialized():
            os.environ.setdefault("RAY_USAGE_STATS_ENABLED", "0")
            address = spec.executor.ray_address or os.environ.get("RAY_ADDRESS")
            options: dict[str, Any] = {"include_dashboard": False, "log_to_driver": False}
            if not address:
                options["object_store_memory"] = RAY_OBJECT_STORE
            ray.init(address=address, **options)
            self._started = True
        self.workers = max(1, spec.executor.workers)
        self.slots = max(1, spec.executor.concurrency)
        per_actor = max(1, math.ceil(self.slots / self.workers))
        self._actor = ray.remote(_RayWorker).options(max_concurrency=per_actor, num_cpus=0)
        self._blobs = ray.put(dict(blobs))
        # Ray takes a local folder as a runtime environment only in ray.init(), which a
        # session already started (a notebook's, a test's) has done: the code travels as
        # a zip in the object store, put once, and each actor unpacks it.
        self._code = ray.put(pack(spec.executor.ship)) if spec.executor.ship else None
        self._actors = self._spawn()
        self._next = 0

    def _spawn(self, count: int | None = None) -> list[Any]:
        count = self.workers if count is None else count
        return [self._actor.remote(self._blobs, self._code) for _ in range(count)]

    def submit(self, work: Work) -> Future[list[Done]]:
        actor = self._actors[self._next % len(self._actors)]
        self._next += 1
        future: Future[list[Done]] = actor.run.remote(work).future()
        return future

    def crashed(self, exc: BaseException) -> bool:
        errors = self._ray.exceptions
        return isinstance(exc, (errors.RayActorError, errors.WorkerCrashedError))

    def restart(self) -> None:
        """Replace the actors that died; the others, alive and warm, stay.

        (Nothing is in flight when the driver restarts: an actor that has not answered its
        ping ``PING_S`` after they were all sent is taken for dead, and killed.)
        """
        pings = [(actor, actor.ping.remote()) for actor in self._actors]
        deadline = time.monotonic() + PING_S  # (one wait for all: not PING_S each)
        alive = []
        for actor, ping in pings:
            try:
                self._ray.get(ping, timeout=max(0.0, deadline - time.monotonic()))
                alive.append(actor)
            except Exception:  # (RayActorError: it died; GetTimeoutError: it hangs)
                self._ray.kill(actor)
        self._actors = alive + self._spawn(self.workers - len(alive))

    def close(self) -> None:
        for actor in self._actors:
            self._ray.kill(actor)
        if self._started:
            self._ray.shutdown()


def on_ray(spec: RunSpec, blobs: Callable[[], Mapping[str, Blob]]) -> Backend:
    """The ``ray`` backend of a run (``BACKENDS["ray"]``)."""
    return OnRay(spec, blobs())
