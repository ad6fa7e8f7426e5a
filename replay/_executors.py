"""Where trials run: this process, worker processes, a Ray cluster or a Dask cluster.

Every backend is a ``concurrent.futures`` executor the one driver loop
(``_runner.execute``) submits ``run_work`` to, one trial at a time; they
differ only in how many trials are in flight and how a crashed worker shows.

- local, ``--workers 1`` (default): threads of this process, one trial per
  submission; cassettes are written in place.
- local, ``--workers N``: N worker processes (``forkserver``), each running
  its share of ``--concurrency`` in threads, sent one trial at a time and
  answering each as it finishes; fixtures are sent once per worker, as bytes.
- ray: one threaded actor per worker with ``max_concurrency`` = its share of
  ``--concurrency`` (a blocking agent's trials run in threads; an async
  agent's as tasks of the process's one loop), one trial per call; fixtures
  in the object store once; the agent's code (``--ship DIR``) there too, as
  a zip each actor unpacks onto its import path.
- dask: ``Client.get_executor()`` on ``--dask-address`` or a local cluster;
  fixtures go to the workers through a worker plugin, so workers that join
  later (a nanny's restart, autoscaling) get them too.
"""

from __future__ import annotations

import contextlib
import functools
import hashlib
import io
import itertools
import math
import multiprocessing
import os
import pickle
import sys
import tempfile
import threading
import time
import traceback
import zipfile
from collections.abc import Callable, Mapping
from concurrent.futures import Executor, Future, ThreadPoolExecutor
from multiprocessing.connection import Connection
from pathlib import Path
from typing import TYPE_CHECKING, Any

from recorder import ConfigError, ReplayError

from ._work import Blob, Done, Work, hold_patches, install_fixtures, run_work, sweep_scratch

if TYPE_CHECKING:
    from ._spec import RunSpec

RAY_OBJECT_STORE = 256 * 1024 * 1024
"""Object store bytes for a Ray cluster started here (small: fixtures and cassettes)."""
NO_WORKERS_S = 120.0
"""Seconds a Dask cluster may have no workers at all before the run fails."""


class ClusterError(ReplayError):
    """The cluster running the trials cannot run them (no workers left)."""


class Backend:
    """An executor and how the driver loop uses it."""

    slots = 1
    """Submissions in flight."""
    remote = True
    """Work runs away from this process: cassettes come back as bytes."""

    def submit(self, work: Work) -> Future[list[Done]]:
        """Start one batch."""
        raise NotImplementedError

    def crashed(self, exc: BaseException) -> bool:
        """Whether ``exc`` says the worker running the batch died (not that the batch failed)."""
        return False

    def restart(self) -> None:
        """Make the backend usable again after a crash."""

    def stalled(self) -> None:
        """Nothing has finished for a while: raise if the backend cannot make progress."""

    def close(self) -> None:
        """Release workers."""


class InProcess(Backend):
    """Threads of this process."""

    remote = False

    def __init__(self, concurrency: int) -> None:
        self.slots = max(1, concurrency)
        self._pool = ThreadPoolExecutor(max_workers=self.slots)

    def submit(self, work: Work) -> Future[list[Done]]:
        return self._pool.submit(run_work, work)

    def close(self) -> None:
        self._pool.shutdown(wait=False, cancel_futures=True)


def _start_worker(path: list[str], blobs: Mapping[str, Blob]) -> None:
    for entry in reversed(path):  # the driver's import path: its agent is importable here too
        if entry not in sys.path:
            sys.path.insert(0, entry)
    install_fixtures(blobs)
    hold_patches()
    sweep_scratch()  # what a worker that died here before left


class WorkerDied(Exception):
    """The worker process running a batch exited before answering."""


def _packed(future: Future[list[Done]]) -> bytes:
    """A finished batch as bytes; an answer that cannot be pickled becomes an error that can."""
    try:
        error = future.exception()
        return pickle.dumps((None, error) if error is not None else (future.result(), None))
    except Exception as exc:
        trace = "".join(traceback.format_exception(exc)).strip().splitlines()[-1]
        return pickle.dumps((None, RuntimeError(f"the worker could not send its answer: {trace}")))


def _actor_main(conn: Connection, path: list[str], blobs: Mapping[str, Blob], threads: int) -> None:
    """A worker process: runs the batches it is sent in threads, answers each when done."""
    try:
        _start_worker(path, blobs)
    except BaseException as exc:
        conn.send(("failed", f"{type(exc).__name__}: {exc}"))
        return
    conn.send(("ready", None))
    lock = threading.Lock()
    pool = ThreadPoolExecutor(max_workers=threads)

    def answer(key: int, future: Future[list[Done]]) -> None:
        data = _packed(future)
        with lock, contextlib.suppress(OSError):  # the driver may be gone
            conn.send((key, data))

    while True:
        try:
            message = conn.recv()
        except EOFError:  # the driver is gone
            break
        if message is None:
            break
        key, work = message
        pool.submit(run_work, work).add_done_callback(functools.partial(answer, key))
    pool.shutdown(wait=True)
    conn.close()


STARTUP_S = 120.0
"""Seconds a new worker process may take to import and load its fixtures."""


class _Actor:
    """The driver's side of one worker process: send batches, resolve their futures.

    Raises:
        ConfigError: The worker could not start (its fixtures, its import path).
    """

    def __init__(self, context: Any, path: list[str], blobs: Mapping[str, Blob], threads: int):
        self.conn, child = context.Pipe()
        self.process = context.Process(
            target=_actor_main, args=(child, path, blobs, threads), daemon=True
        )
        self.process.start()
        child.close()
        status, detail = "failed", "it exited at once"
        with contextlib.suppress(EOFError, OSError):
            if self.conn.poll(STARTUP_S):
                status, detail = self.conn.recv()
            else:
                detail = f"it did not start within {STARTUP_S:g} s"
        if status != "ready":
            self.process.kill()
            self.process.join()
            raise ConfigError(f"a worker process could not start: {detail}")
        self.futures: dict[int, Future[list[Done]]] = {}
        self.lock = threading.Lock()
        self.alive = True
        self.reader = threading.Thread(target=self._read, daemon=True)
        self.reader.start()

    def _read(self) -> None:
        while True:
            try:
                key, data = self.conn.recv()
            except (EOFError, OSError):
                break
            with self.lock:
                future = self.futures.pop(key)
            try:
                result, error = pickle.loads(data)
            except Exception as exc:  # e.g. an exception class the driver cannot rebuild
                result, error = None, RuntimeError(f"cannot read the worker's answer: {exc!r}")
            if error is not None:
                future.set_exception(error)
            else:
                future.set_result(result)
        self.process.join()
        with self.lock:
            self.alive = False
            lost, self.futures = self.futures, {}
        code = self.process.exitcode
        for future in lost.values():
            future.set_exception(WorkerDied(f"worker process {self.process.pid} exited ({code})"))

    def submit(self, key: int, work: Work) -> Future[list[Done]]:
        future: Future[list[Done]] = Future()
        with self.lock:
            if not self.alive:
                raise WorkerDied(f"worker process {self.process.pid} has exited")
            self.futures[key] = future
        try:
            self.conn.send((key, work))
        except OSError as exc:
            with self.lock:
                self.futures.pop(key, None)
            raise WorkerDied(f"worker process {self.process.pid} is gone: {exc}") from None
        return future

    def load(self) -> int:
        with self.lock:
            return len(self.futures)

    def close(self) -> None:
        if self.alive:
            with contextlib.suppress(OSError):
                self.conn.send(None)
        self.process.join(timeout=10)
        if self.process.is_alive():
            self.process.kill()
        self.reader.join(timeout=10)
        self.conn.close()


class Processes(Backend):
    """Worker processes that each run their share of the trials in flight in threads.

    Trials go one per message and come back as each finishes: no batch
    waits for its slowest trial. A worker that dies fails only its own
    trials in flight (``WorkerDied``); the others go on.
    """

    def __init__(self, workers: int, concurrency: int, blobs: Mapping[str, Blob]) -> None:
        self.workers = workers
        self.slots = max(1, concurrency)
        self._threads = max(1, math.ceil(self.slots / workers))
        self._context = multiprocessing.get_context("forkserver")
        self._path = [os.getcwd(), *sys.path]
        self._blobs = dict(blobs)
        self._keys = itertools.count()
        self._actors = [self._spawn() for _ in range(workers)]

    def _spawn(self) -> _Actor:
        return _Actor(self._context, self._path, self._blobs, self._threads)

    def submit(self, work: Work) -> Future[list[Done]]:
        actor = min((a for a in self._actors if a.alive), key=_Actor.load, default=None)
        if actor is None:
            raise WorkerDied("every worker process has exited")
        return actor.submit(next(self._keys), work)

    def crashed(self, exc: BaseException) -> bool:
        return isinstance(exc, WorkerDied)

    def restart(self) -> None:
        for n, actor in enumerate(self._actors):
            if not actor.alive:
                actor.close()
                self._actors[n] = self._spawn()

    def close(self) -> None:
        for actor in self._actors:
            actor.close()


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
        _start_worker([], blobs)  # (the driver's import path means nothing on a cluster)

    def run(self, work: Work) -> list[Done]:
        return run_work(work)


class OnRay(Backend):
    """Threaded Ray actors, one per worker."""

    def __init__(self, spec: RunSpec, blobs: Mapping[str, Blob]) -> None:
        try:
            import ray
        except ImportError:
            raise ConfigError("--executor ray needs Ray: pip install 'agent-replay[ray]'") from None
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

    def _spawn(self) -> list[Any]:
        return [self._actor.remote(self._blobs, self._code) for _ in range(self.workers)]

    def submit(self, work: Work) -> Future[list[Done]]:
        actor = self._actors[self._next % len(self._actors)]
        self._next += 1
        future: Future[list[Done]] = actor.run.remote(work).future()
        return future

    def crashed(self, exc: BaseException) -> bool:
        errors = self._ray.exceptions
        return isinstance(exc, (errors.RayActorError, errors.WorkerCrashedError))

    def restart(self) -> None:
        for actor in self._actors:
            self._ray.kill(actor)
        self._actors = self._spawn()

    def close(self) -> None:
        for actor in self._actors:
            self._ray.kill(actor)
        if self._started:
            self._ray.shutdown()


class OnDask(Backend):
    """``Client.get_executor()`` on a Dask cluster (a local one unless an address is given)."""

    def __init__(self, spec: RunSpec, blobs: Mapping[str, Blob]) -> None:
        try:
            from distributed import Client, LocalCluster
        except ImportError:
            raise ConfigError(
                "--executor dask needs Dask: pip install 'agent-replay[dask]'"
            ) from None
        self._cluster = None
        if spec.executor.dask_address:
            self._client = Client(spec.executor.dask_address)
        else:
            import dask

            workers = max(1, spec.executor.workers)
            # The driver retries what a dead worker lost (alone, bounded): Dask retrying it
            # too would run a trial that kills its worker 4 times per driver attempt.
            with dask.config.set({"distributed.scheduler.allowed-failures": 0}):
                self._cluster = LocalCluster(
                    n_workers=workers,
                    threads_per_worker=max(1, math.ceil(spec.executor.concurrency / workers)),
                    processes=True,
                    dashboard_address=None,
                )
            self._client = Client(self._cluster)
        # A plugin, not a one-off client.run: workers that join later (a nanny's restart
        # after a crash, autoscaling) get the fixtures and the interceptors too.
        self._client.register_plugin(_dask_setup([os.getcwd(), *sys.path], dict(blobs)))
        self.slots = max(1, spec.executor.concurrency)
        self._workerless_since: float | None = None
        # pure=False: a trial resubmitted after a crash must run again, not hit the cache.
        self._executor: Executor = self._client.get_executor(pure=False)

    def submit(self, work: Work) -> Future[list[Done]]:
        return self._executor.submit(run_work, work)

    def crashed(self, exc: BaseException) -> bool:
        return type(exc).__name__ == "KilledWorker"

    def stalled(self) -> None:
        """Fail the run when the cluster has had no workers for ``NO_WORKERS_S``.

        Dask waits for workers forever; a cluster whose workers all died and were not
        replaced (a nanny does not restart a worker killed while it starts) would hang
        the run.

        Raises:
            ClusterError: No workers for ``NO_WORKERS_S`` seconds.
        """
        now = time.monotonic()
        if self._client.scheduler_info().get("workers"):
            self._workerless_since = None
            return
        if self._workerless_since is None:
            self._workerless_since = now
        elif now - self._workerless_since >= NO_WORKERS_S:
            raise ClusterError(
                f"the Dask cluster has had no workers for {NO_WORKERS_S:g} s (they died and "
                "were not replaced); the trials stored so far stay: --resume once it has "
                "workers again (a local cluster starts afresh)"
            )

    def close(self) -> None:
        self._client.close()
        if self._cluster is not None:
            self._cluster.close()


def _dask_setup(path: list[str], blobs: Mapping[str, Blob]) -> Any:
    """A Dask worker plugin running ``_start_worker`` on every worker, now and to come."""
    from distributed import WorkerPlugin

    class ShipFixtures(WorkerPlugin):
        name = (
            "agent-replay-"
            + hashlib.sha256(
                "\0".join(sorted(f"{k}:{b.hash}" for k, b in blobs.items())).encode()
            ).hexdigest()[:16]
        )

        def setup(self, worker: Any) -> None:
            _start_worker(path, blobs)

    return ShipFixtures()


def backend(spec: RunSpec, blobs: Callable[[], Mapping[str, Blob]]) -> Backend:
    """The backend ``spec`` asks for (``blobs`` is called only when workers need them)."""
    if spec.executor.kind == "ray":
        return OnRay(spec, blobs())
    if spec.executor.kind == "dask":
        return OnDask(spec, blobs())
    if spec.executor.kind != "local":
        raise ConfigError(f"unknown executor {spec.executor.kind!r}; use local, ray or dask")
    if spec.executor.workers <= 1:
        return InProcess(spec.executor.concurrency)
    return Processes(spec.executor.workers, spec.executor.concurrency, blobs())
