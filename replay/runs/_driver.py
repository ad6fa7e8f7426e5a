"""The driver loop of a run: submit trials, store what finishes, resubmit what a crash lost."""

from __future__ import annotations

import dataclasses
import queue
from collections import Counter, deque
from collections.abc import Callable, Sequence
from concurrent.futures import Future
from pathlib import Path

from ..cases import replacing, sweep_parts
from ..graders import Judge
from ..modes import cassette_name
from ..results import Store, TrialRecord
from ..surroundings import Fault
from ._backend import Backend
from ._spec import RunSpec
from ._work import Done, Job, Work, failed

MAX_CRASHES = 2
"""Times a trial may take its worker down (alone) before it is stored as an ``error``."""
WATCH_S = 10.0
"""Seconds without a finished trial after which the driver asks the backend if it is stuck."""


class Driver:
    """The one loop: submit trials, store what finishes, resubmit what a crash lost.

    When a worker dies, every trial it (or, for a process pool, any worker)
    had in flight is a suspect: nothing more is submitted until what is in
    flight has finished, the backend restarts, and the suspects run one at a
    time, alone — a crash then is the suspect's own. A trial that crashes
    alone ``MAX_CRASHES`` times is stored as ``error``; the innocent ones
    run normally and keep their verdicts.
    """

    def __init__(
        self,
        spec: RunSpec,
        runner: Backend,
        judge: Judge | None,
        faults: tuple[Fault, ...],
        out: Path,
        store: Store,
        on_trial: Callable[[str | None, int, int], None] | None,
    ) -> None:
        self.spec, self.runner, self.judge, self.faults = spec, runner, judge, faults
        self.out, self.store, self.on_trial = out, store, on_trial
        self.count = self.total = 0
        self.crashes: Counter[tuple[str, int]] = Counter()

    def _work(self, jobs: Sequence[Job]) -> Work:
        remote = self.runner.remote
        recorded = {}
        if remote:
            recorded = {str(j.recorded): j.recorded.read_bytes() for j in jobs if j.recorded}
        return Work(
            self.spec,
            tuple(jobs),
            self.judge,
            self.faults,
            out=None if remote else str(self.out),
            recorded=recorded,
            threads=len(jobs),
        )

    def run(self, todo: Sequence[Job]) -> None:
        self.total = len(todo)
        if self.runner.remote:  # what a driver killed while writing cassettes here left
            sweep_parts(self.out)
        pending, suspects = deque(todo), deque[Job]()
        in_flight: dict[Future[list[Done]], tuple[tuple[Job, ...], bool]] = {}
        # Finished futures arrive here as they finish: waiting costs the same with 64 in
        # flight as with one (concurrent.futures.wait installs a waiter on each, every time).
        finished: queue.SimpleQueue[Future[list[Done]]] = queue.SimpleQueue()
        broken = False

        def submit(jobs: tuple[Job, ...], alone: bool) -> bool:
            try:
                future = self.runner.submit(self._work(jobs))
                in_flight[future] = (jobs, alone)
                future.add_done_callback(finished.put)
            except Exception as exc:  # a pool a worker just broke refuses new work at once
                if not self.runner.crashed(exc):
                    raise
                if alone:  # a fresh worker died on it: it counts (no endless restarts)
                    self._crash(jobs[0], exc, suspects)
                else:
                    suspects.extendleft(reversed(jobs))
                return False
            return True

        def top_up() -> bool:
            """Fill the free slots; False when the backend turned out broken."""
            if suspects and not in_flight:
                return submit((suspects.popleft(),), alone=True)
            while not suspects and pending and len(in_flight) < self.runner.slots:
                if not submit((pending.popleft(),), alone=False):
                    return False
            return True

        while pending or suspects or in_flight:
            if not broken:
                broken = not top_up()
            if not in_flight:
                self.runner.restart()
                broken = False
                continue
            try:
                ready = [finished.get(timeout=WATCH_S)]
            except queue.Empty:
                self.runner.stalled()  # raises when the backend cannot make progress
                continue
            while not finished.empty():
                ready.append(finished.get())
            done: list[Done] = []
            for future in ready:
                jobs, alone = in_flight.pop(future)
                try:
                    results = future.result()
                except Exception as exc:
                    if not self.runner.crashed(exc):
                        for job in jobs:
                            self._store(failed(job, f"{type(exc).__name__}: {exc}"))
                        continue
                    broken = True
                    if not alone:
                        suspects.extend(jobs)
                        continue
                    self._crash(jobs[0], exc, suspects)
                    continue
                done += results
            if not broken:  # refill the slots first: workers wait on nothing while we store
                broken = not top_up()
            for result in done:
                self._store(result)
            if broken and not in_flight:
                self.runner.restart()
                broken = False

    def _crash(self, job: Job, exc: BaseException, suspects: deque[Job]) -> None:
        """A worker died running ``job`` alone: retry it, or store it as an error."""
        self.crashes[(job.case.id, job.index)] += 1
        if self.crashes[(job.case.id, job.index)] < MAX_CRASHES:
            suspects.appendleft(job)
            return
        why = (
            f"the worker running this trial died {MAX_CRASHES} times, the trial alone in it "
            f"(did the agent end its own process?): {exc}"
        )
        self._store(failed(job, why))

    def _store(self, result: Done) -> None:
        record = result.record
        for name, data in result.files.items():
            path = self.out / name
            # Flushed before its rename: a crash leaves it whole. (The folder is swept
            # once a run, not once a cassette: each sweep reads the whole folder.)
            with replacing(path, sweep=False) as tmp:
                tmp.write_bytes(data)
            if name == cassette_name(result.case_id, result.index):
                record = dataclasses.replace(record, cassette=str(path))
        self.store.add_trial(self.spec.name, record)
        self.count += 1
        if self.on_trial:
            self.on_trial(_progress(record), self.count, self.total)


REASON_CHARS = 120
"""The longest reason a progress line gives (the case id is never cut)."""


def _progress(trial: TrialRecord) -> str:
    """``refund-4812 #2 fail: assertion failed (state: ...)``: a finished trial.

    If it did not pass: its primary cause and the line that says so, as ``replay report``
    lists them.
    """
    line = f"{trial.case_id} #{trial.idx} {trial.verdict.value}"
    why = trial.why_not_passed
    if why is None:
        return line
    cause, detail = why
    reason = " ".join(detail.split())
    if len(reason) > REASON_CHARS:
        reason = reason[: REASON_CHARS - 1] + "…"
    return f"{line}: {cause.value}" + (f" ({reason})" if reason else "")
