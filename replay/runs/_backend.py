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

from collections.abc import Callable, Mapping
from concurrent.futures import Future, ThreadPoolExecutor
from typing import TYPE_CHECKING

from recorder import ConfigError, ReplayError

from ..plugins import GROUPS, Registry
from ._work import Blob, Done, Work, run_work

if TYPE_CHECKING:
    from ._spec import RunSpec


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


Factory = Callable[["RunSpec", Callable[[], Mapping[str, Blob]]], Backend]
"""Makes a backend for a run (``blobs()`` gives the fixtures' bytes, for workers that need them)."""


def _factory(name: str, obj: object) -> Factory:
    """What a plugin's ``agent_replay.backends`` entry point names: a backend factory."""
    if not callable(obj):
        raise ConfigError(f"it names a {type(obj).__name__}, not a backend factory")
    return obj


BACKENDS: Registry[Factory] = Registry("executor", GROUPS["backends"], _factory)
"""Backends by ``--executor`` name: ``local`` (``_processes``), ``ray``, ``dask``, then
installed plugins' (``agent_replay.backends``)."""


def backend(spec: RunSpec, blobs: Callable[[], Mapping[str, Blob]]) -> Backend:
    """The backend ``spec`` asks for (``blobs`` is called only when workers need them).

    Raises:
        ConfigError: No backend of that name.
    """
    return BACKENDS[spec.executor.kind](spec, blobs)
