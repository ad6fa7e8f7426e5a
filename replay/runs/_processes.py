"""The local backend: this process's threads (``--workers 1``), or worker processes."""

from __future__ import annotations

import contextlib
import functools
import itertools
import math
import multiprocessing
import multiprocessing.forkserver
import os
import pickle
import sys
import threading
import traceback
from collections.abc import Callable, Mapping
from concurrent.futures import Future, ThreadPoolExecutor
from multiprocessing.connection import Connection
from typing import TYPE_CHECKING, Any

from recorder import ConfigError

from ._backend import Backend, InProcess
from ._work import Blob, Done, Work, hold_patches, install_fixtures, run_work, sweep_scratch

if TYPE_CHECKING:
    from ._spec import RunSpec


def start_worker(path: list[str], blobs: Mapping[str, Blob]) -> None:
    """Make a worker process ready: the driver's import path, the fixtures, the interceptors."""
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


def _actor_main(
    conn: Connection,
    path: list[str],
    blobs: Mapping[str, Blob],
    threads: int,
    environ: Mapping[str, str],
) -> None:
    """A worker process: runs the batches it is sent in threads, answers each when done.

    It takes ``environ``, the driver's environment as the run started: a worker forked
    from the fork server would otherwise have the one the server started with (the
    driver's at its first run), not a variable set since (an agent's key, the scratch
    folder). (Its working directory is the driver's already: multiprocessing moves
    there as the process starts.)
    """
    os.environ.clear()
    os.environ.update(environ)
    try:
        start_worker(path, blobs)
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


PRELOAD = ("replay.runs._processes", "recorder._vcr", "recorder._http")
"""What the fork server imports once, before it forks any worker: each worker starts with
the harness and the recorder's interceptors loaded (4 workers each importing them, in
turn, made a run's start-up about 6 s on 2 cores; a fork takes milliseconds). Only the
project's own modules: an agent's module may start threads at import, which a fork would
not carry over."""


def _forkserver() -> Any:
    """The ``forkserver`` context, its server (when it starts) preloading ``PRELOAD``.

    The fork server is one per process, started by its first use: where something
    else in this process started it before, it goes on without the preload (workers
    import what they need themselves, as before).
    """
    context = multiprocessing.get_context("forkserver")
    server = getattr(multiprocessing.forkserver, "_forkserver", None)
    current = list(getattr(server, "_preload_modules", None) or ["__main__"])
    context.set_forkserver_preload([*current, *(m for m in PRELOAD if m not in current)])
    return context


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
            target=_actor_main, args=(child, path, blobs, threads, dict(os.environ)), daemon=True
        )
        self.process.start()
        child.close()
        self.futures: dict[int, Future[list[Done]]] = {}
        self.lock = threading.Lock()
        self.alive = True
        self.reader = threading.Thread(target=self._read, daemon=True)

    def ready(self) -> None:
        """Wait until the worker has started (workers started together start at once)."""
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
        if self.reader.is_alive():
            self.reader.join(timeout=10)
        self.conn.close()


class Processes(Backend):
    """Worker processes that each run their share of the trials in flight in threads.

    Trials go one per message and come back as each finishes: no batch
    waits for its slowest trial. A worker that dies fails only its own
    trials in flight (``WorkerDied``); the others go on.

    The workers share the driver's machine and folders: they write each trial's
    cassette where the driver would (as trials in the driver's threads do), and read
    recorded ones where they are, so only rows and grades come back. (Sent back as
    bytes, each cassette cost a copy in a scratch folder, a pipe, and the driver's
    write, sync and rename, one trial after another in the one process that stores
    them all.)
    """

    remote = False

    def __init__(self, workers: int, concurrency: int, blobs: Mapping[str, Blob]) -> None:
        self.workers = workers
        self.slots = max(1, concurrency)
        self._threads = max(1, math.ceil(self.slots / workers))
        self._context = _forkserver()
        self._path = [os.getcwd(), *sys.path]
        self._blobs = dict(blobs)
        self._keys = itertools.count()
        self._actors = [self._start() for _ in range(workers)]
        try:  # started together, waited for in turn: their imports overlap
            for actor in self._actors:
                actor.ready()
        except BaseException:
            for actor in self._actors:
                actor.process.kill()
                actor.process.join()
                actor.conn.close()
            raise

    def _start(self) -> _Actor:
        return _Actor(self._context, self._path, self._blobs, self._threads)

    def _spawn(self) -> _Actor:
        actor = self._start()
        actor.ready()
        return actor

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


def local(spec: RunSpec, blobs: Callable[[], Mapping[str, Blob]]) -> Backend:
    """The ``local`` backend of a run: this process, or worker processes (``--workers``)."""
    if spec.executor.workers <= 1:
        return InProcess(spec.executor.concurrency)
    return Processes(spec.executor.workers, spec.executor.concurrency, blobs())
