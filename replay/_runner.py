"""Running many trials of many cases under one set of pins, into the results store.

One driver loop over a ``concurrent.futures`` executor (``_executors``: this
process's threads, worker processes, Ray or Dask): it submits trials to
``_work.run_work``, stores what finishes (the driver alone writes the store),
and resubmits what a crashed worker lost. A trial that raises is an
``error`` trial; the run goes on. Resuming a run skips the trials stored.
"""

from __future__ import annotations

import queue
from collections import Counter, deque
from collections.abc import Callable, Sequence
from concurrent.futures import Future
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any, Literal

from recorder import ConfigError, __version__, patched, read_header

from . import graders
from ._calibration import MIN_AGREEMENT, MIN_LABELS, calibrated_judges
from ._case import Case, load_case
from ._executors import Backend, backend
from ._faults import Fault, parse_faults
from ._store import Store
from ._work import Done, Job, Work, blob, failed, sweep_scratch
from ._world import load_fixture
from .graders import Judge
from .modes import REGISTRY, Mode, cassette_name, load_callable


@dataclass(frozen=True)
class RunSpec:
    """Everything that defines a run (stored with it, so it can be resumed)."""

    name: str
    cases: list[str]
    """Case file paths."""
    mode: str
    """A registered mode's name (``replay.modes.REGISTRY``)."""
    trials: int = 1
    agent: str | None = None
    """``module:function`` of the agent (offline and sandbox)."""
    tools: str | None = None
    """``module:function`` returning the tools for a world connection (offline and sandbox)."""
    llm: Literal["live", "frozen"] | None = None
    """Where the LLM's answers come from (None: the mode's default)."""
    llm_url: str | None = None
    """The OpenAI-compatible endpoint the agent talks to when the LLM is live."""
    cassettes: str | None = None
    """Directory of recorded cassettes (review and offline), found by case id."""
    out: str | None = None
    """Directory for the trials' cassettes (default: beside the store)."""
    model: str | None = None
    settings: dict[str, Any] = field(default_factory=dict)
    concurrency: int = 1
    """Trials in flight at once, over all workers."""
    allow_env: list[str] = field(default_factory=list)
    """Environment variables named like secrets the agent may still see (sandbox)."""
    ignore_hosts: list[str] = field(default_factory=list)
    """Hosts (``host`` or ``host/path``) the trials' cassettes ignore, besides the default list."""
    default_ignore: bool = True
    """Ignore the default list of tracing endpoints (``recorder.DEFAULT_IGNORE_HOSTS``)."""
    prices: dict[str, tuple[float, float]] = field(default_factory=dict)
    """USD per million input and output tokens, by model: for costs and max_cost."""
    judge_url: str | None = None
    """OpenAI-compatible endpoint of the LLM judge that grades the cases' rubrics."""
    judge_model: str | None = None
    judge_timeout: float = 60.0
    judge_min_labels: int = MIN_LABELS
    """Human labels a judge needs before its grades count (0: they count at once)."""
    judge_min_agreement: float = MIN_AGREEMENT
    """Agreement with those labels a judge must exceed before its grades count."""
    no_judge: bool = False
    """Skip rubric grading even where cases have a rubric."""
    graders: list[str] = field(default_factory=list)
    """Graders added to every case's (registered names, or ``MODULE:NAME``)."""
    user: Literal["live", "frozen"] = "live"
    """Multi-turn cases: a live simulated user, or one answering from the cassettes."""
    user_url: str | None = None
    """OpenAI-compatible endpoint of the live simulated user (default: ``llm_url``)."""
    user_model: str = "user-sim"
    faults: list[str] = field(default_factory=list)
    """Faults (``KIND[:TOOL][@RATE]``) injected in every case's trials, after the case's own."""
    fault_seed: int = 0
    """Seeds each trial's fault draws (with the case id and trial index)."""
    executor: Literal["local", "ray", "dask"] = "local"
    """Where trials run (see ``replay._executors``)."""
    workers: int = 1
    """Worker processes (local), Ray actors or Dask workers; 1 locally: this process."""
    ray_address: str | None = None
    """A Ray cluster to join (default: ``RAY_ADDRESS``, else a local one is started)."""
    ship: str | None = None
    """A folder with the agent's code, shipped to Ray workers as their working directory."""
    dask_address: str | None = None
    """A Dask scheduler to use (default: a local cluster)."""


def _check_graders(spec: RunSpec, cases: list[Case]) -> None:
    """Every grader the run and its cases name is registered, before any trial runs.

    (The agent's and tools' modules are imported by now: their graders count.)

    Raises:
        ConfigError: A module does not import, or a name is registered by nobody.
    """
    for case in cases:
        uses = graders.resolve([*spec.graders, *case.grader_uses])
        missing = [u.name for u in uses if u.name not in graders.REGISTRY]
        if missing:
            raise ConfigError(
                f"case {case.id}: no grader named {', '.join(map(repr, missing))} is registered; "
                "name it MODULE:NAME so that its module is imported"
            )


def recorded_cassettes(directory: Path) -> dict[str, list[Path]]:
    """The cassettes in ``directory`` by the case id in their header, each list sorted."""
    found: dict[str, list[Path]] = {}
    for path in sorted(directory.glob("*.cassette")):
        try:
            header = read_header(path)  # (the events are read by the trial that uses them)
        except Exception:  # a foreign or damaged file in the folder belongs to no case
            continue
        if header.pins.user.get("role") == "judge":  # a judge's calls, not a trial
            continue
        case_id = header.case_id
        if case_id is not None:
            found.setdefault(case_id, []).append(path)
    return found


def execute(
    spec: RunSpec,
    store: Store,
    *,
    resume: bool = False,
    on_trial: Callable[[str | None, int, int], None] | None = None,
) -> None:
    """Run (or resume) every trial of ``spec`` not yet in ``store``.

    ``on_trial(description, done, total)`` is told of progress (first with None, 0).

    Raises:
        ConfigError: Bad specification (mode needs, unknown agent/tools...).
        CaseFileError: A case file is malformed.
    """
    if not spec.cases:
        raise ConfigError("no case files given")
    if spec.trials < 1:
        raise ConfigError(f"--trials must be at least 1 (got {spec.trials})")
    cases = [load_case(p) for p in spec.cases]
    seen: dict[str, str] = {}
    for case in cases:
        if case.id in seen:
            raise ConfigError(f"case id {case.id!r} is used by {seen[case.id]} and {case.path}")
        seen[case.id] = str(case.path)
    mode = REGISTRY[spec.mode]
    llm = mode.llm_source(spec.llm)
    if mode.runs_agent and llm == "live" and not spec.llm_url:
        raise ConfigError(
            f"{mode.name} with a live LLM needs --llm-url (the endpoint the agent uses)"
        )
    faults = parse_faults(spec.faults)
    if faults and not mode.runs_agent:  # (a case's own faults are moot: no agent runs)
        raise ConfigError(f"faults are injected where the agent runs, not in {mode.name}")
    jobs = _jobs(spec, mode, cases)
    judge = _judge(spec, cases, store)
    if mode.runs_agent and (not spec.agent or not spec.tools):
        raise ConfigError(f"{mode.name} mode needs --agent MOD:FN and --tools MOD:FN")
    if spec.executor == "local":  # fail early; on a cluster the code may live on workers only
        for named in (spec.agent if mode.runs_agent else None, spec.tools):
            if named:
                load_callable(named)
        _check_graders(spec, cases)
    if resume:
        if store.run(spec.name) is None:
            raise ConfigError(f"no run {spec.name!r} to resume in {store.path}")
    else:
        store.start_run(spec.name, asdict(spec), _pins(spec, mode, cases))
    done = store.finished_trials(spec.name)
    todo = [j for j in jobs if (j.case.id, j.index) not in done]
    out = Path(spec.out) if spec.out else store.path.parent / "cassettes" / spec.name
    out.mkdir(parents=True, exist_ok=True)
    if on_trial:
        on_trial(None, 0, len(todo))
    fixtures = {str(c.fixture): c.fixture for c in cases}
    runner = backend(spec, lambda: {k: blob(load_fixture(p)) for k, p in fixtures.items()})
    try:
        with patched():  # trials run here (in-process): interceptors installed once
            _Driver(spec, runner, judge, tuple(faults), out, store, on_trial).run(todo)
    finally:  # also on Ctrl-C or a store failure: stored trials stay for --resume
        runner.close()
        sweep_scratch()  # the scratch folders of workers that died on this machine
    store.finish_run(spec.name)


MAX_CRASHES = 2
"""Times a trial may take its worker down (alone) before it is stored as an ``error``."""
WATCH_S = 10.0
"""Seconds without a finished trial after which the driver asks the backend if it is stuck."""


class _Driver:
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
        row = dict(result.row)
        for name, data in result.files.items():
            path = self.out / name
            tmp = path.with_name(path.name + ".part")
            tmp.write_bytes(data)
            tmp.replace(path)
            if name == cassette_name(result.case_id, result.index):
                row["cassette"] = str(path)
        self.store.add_trial(self.spec.name, row, result.grades)
        self.count += 1
        if self.on_trial:
            verdict = f"{result.case_id}#{result.index}: {row['verdict']}"
            self.on_trial(verdict, self.count, self.total)


def _judge(spec: RunSpec, cases: Sequence[Case], store: Store) -> Judge | None:
    if spec.no_judge:
        return None
    judged = [c.id for c in cases if c.rubric]
    if not spec.judge_url:
        if judged:
            raise ConfigError(
                f"case {', '.join(judged)} has a rubric: give --judge-url URL --judge-model "
                "MODEL (an OpenAI-compatible endpoint), or --no-judge to skip rubric grading"
            )
        return None
    if not spec.judge_model:
        raise ConfigError("--judge-url needs --judge-model (the judge model to ask for)")
    return Judge(
        spec.judge_url,
        spec.judge_model,
        timeout=spec.judge_timeout,
        calibrated=calibrated_judges(store, spec.judge_min_labels, spec.judge_min_agreement),
    )


def _jobs(spec: RunSpec, mode: Mode, cases: Sequence[Case]) -> list[Job]:
    llm = mode.llm_source(spec.llm)
    talking = [c for c in cases if c.user is not None] if mode.runs_agent else []
    frozen_user = spec.user == "frozen" and bool(talking)
    if frozen_user and mode.recorded == "never":
        raise ConfigError(f"{mode.name} mode talks with a live user only: give --user live")
    if mode.needs_recorded(llm, frozen_user) and not spec.cassettes:
        if mode.recorded == "required":
            raise ConfigError(f"{mode.name} mode needs --cassettes DIR (the recorded trials)")
        source = "LLM" if llm == "frozen" else "user"
        raise ConfigError(f"a frozen {source} needs --cassettes to answer from")
    if talking and spec.user == "live" and not (spec.user_url or spec.llm_url):
        raise ConfigError(
            f"case {talking[0].id!r} talks with a simulated user: give --user-url URL "
            "(or --llm-url), or --user frozen with --cassettes"
        )
    jobs = []
    by_case = recorded_cassettes(Path(spec.cassettes)) if spec.cassettes else {}
    for case in cases:
        needs = mode.needs_recorded(llm, spec.user == "frozen" and case in talking)
        recorded = by_case.get(case.id, []) if needs else []
        if needs and not recorded:
            raise ConfigError(f"no cassette for case {case.id!r} in {spec.cassettes}")
        count = len(recorded) if mode.per_recording else spec.trials
        jobs += [
            Job(case, i, recorded[i % len(recorded)] if recorded else None) for i in range(count)
        ]
    return jobs


def _grader_pins(spec: RunSpec, cases: Sequence[Case]) -> dict[str, Any]:
    """Each grader the run uses: its version and, per case, the arguments it is given.

    (Arguments are a list per case: a case may use one grader twice.)

    (Graders of modules a cluster's workers alone can import are pinned without a version.)
    """
    out: dict[str, Any] = {}
    for case in cases:
        try:
            uses = graders.resolve([*graders.BUILT_IN, *case.grader_uses, *spec.graders])
        except ConfigError:
            uses = [graders.GraderUse(g.rpartition(":")[2]) for g in spec.graders]
        for use in uses:
            pin = out.setdefault(use.name, {"version": graders.VERSIONS.get(use.name)})
            if use.args:
                pin.setdefault("args", {}).setdefault(case.id, []).append(dict(use.args))
    return out


def _pins(spec: RunSpec, mode: Mode, cases: Sequence[Case]) -> dict[str, Any]:
    return {
        "mode": mode.name,
        "agent": spec.agent,
        "tools": spec.tools,
        "model": spec.model,
        "llm": mode.llm_source(spec.llm),
        "settings": spec.settings,
        "grader_version": __version__,
        "graders": _grader_pins(spec, cases),
        "judge": {"model": spec.judge_model, "timeout": spec.judge_timeout}
        if spec.judge_url and not spec.no_judge
        else None,
        "faults": {"seed": spec.fault_seed, "run": spec.faults} if spec.faults else None,
        "user": {"source": spec.user, "model": spec.user_model if spec.user == "live" else None}
        if any(c.user is not None for c in cases)
        else None,
        "fixtures": {c.id: load_fixture(c.fixture).hash for c in cases},
    }
