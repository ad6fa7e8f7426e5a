"""The Dask backend: ``Client.get_executor()``, fixtures shipped by a worker plugin."""

from __future__ import annotations

import hashlib
import math
import os
import sys
import time
from collections.abc import Callable, Mapping
from concurrent.futures import Executor, Future
from typing import TYPE_CHECKING, Any

from recorder import ConfigError

from ._backend import Backend, ClusterError
from ._processes import start_worker
from ._work import Blob, Done, Work, run_work

if TYPE_CHECKING:
    from ._spec import RunSpec


NO_WORKERS_S = 120.0
"""Seconds a Dask cluster may have no workers at all before the run fails."""


class OnDask(Backend):
    """``Client.get_executor()`` on a Dask cluster (a local one unless an address is given)."""

    def __init__(self, spec: RunSpec, blobs: Mapping[str, Blob]) -> None:
        try:
            from distributed import Client, LocalCluster
        except ImportError:
            raise ConfigError(
                "`executor.kind=dask` needs Dask: pip install 'agent-replay[dask]'"
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
                    # No dashboard, and the scheduler's metrics server on a free port, not
                    # 8787: two runs on one machine must not meet there.
                    scheduler_kwargs={"dashboard_address": ":0"},
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
    """A Dask worker plugin running ``start_worker`` on every worker, now and to come."""
    from distributed import WorkerPlugin

    class ShipFixtures(WorkerPlugin):
        name = (
            "agent-replay-"
            + hashlib.sha256(
                "\0".join(sorted(f"{k}:{b.hash}" for k, b in blobs.items())).encode()
            ).hexdigest()[:16]
        )

        def setup(self, worker: Any) -> None:
            start_worker(path, blobs)

    return ShipFixtures()


def on_dask(spec: RunSpec, blobs: Callable[[], Mapping[str, Blob]]) -> Backend:
    """The ``dask`` backend of a run (``BACKENDS["dask"]``)."""
    return OnDask(spec, blobs())
