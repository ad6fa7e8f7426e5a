"""The unit of work: trials run from a picklable spec and the fixtures' bytes.

``run_work(work)`` runs a batch of trials (concurrently, in threads: each in
its own recording context and its own in-memory world, reset between the
trials a thread runs) and returns, per trial, the ``TrialRecord`` the
results store keeps and — when the work runs away from the driver — the
cassette bytes. It resolves the agent and tools from ``module:function`` itself, and
builds worlds from the fixtures' bytes without touching a shared file
system. It never writes the store: the driver alone does.
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import inspect
import os
import shutil
import tempfile
import threading
import traceback
from collections.abc import Callable, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, cast

from recorder import DEFAULT_IGNORE_HOSTS, ConfigError, RecordingFailed, patched, read_cassette

from ..agents import AgentCommand, Caps, ChildAgent, ServerWalls
from ..cases import Case
from ..graders import Cause, Judge, Verdict
from ..modes import (
    REGISTRY,
    Guard,
    Limits,
    Mode,
    Steps,
    TrialPlan,
    TrialResult,
    cassette_name,
    drive,
    drive_async,
    judge_cassette,
    load_callable,
    wait_for,
)
from ..results import GradeRecord, TrialRecord, TrialUsage
from ..surroundings import Fault, FaultInjector, FrozenUser, LiveUser, UserChannel
from ..worlds import Fixture, World, load_fixture, ship

if TYPE_CHECKING:
    from ._spec import RunSpec


@dataclass(frozen=True, slots=True)
class Job:
    """One trial to run."""

    case: Case
    index: int
    recorded: Path | None
    """The recorded cassette it replays or grades (review, offline, frozen channels)."""


@dataclass(frozen=True, slots=True)
class Blob:
    """A fixture as bytes, to rebuild in a worker (``Fixture.from_bytes``)."""

    source: str
    hash: str
    data: bytes | None
    """None on Python 3.10 (no ``serialize``): the worker loads ``source`` itself."""


@dataclass(frozen=True)
class Work:
    """A batch of trials of one run, as it travels to a worker."""

    spec: RunSpec
    jobs: tuple[Job, ...]
    judge: Judge | None = None
    faults: tuple[Fault, ...] = ()
    out: str | None = None
    """Where cassettes go; None: a temporary folder, and their bytes come back."""
    recorded: Mapping[str, bytes] = field(default_factory=dict)
    """Recorded cassettes' bytes by path, for workers that cannot read the driver's files."""
    threads: int = 1
    """Trials of the batch in flight at once."""


@dataclass(frozen=True, slots=True)
class Done:
    """One finished trial: what the driver stores."""

    case_id: str
    index: int
    record: TrialRecord
    """The trial with its grades; its ``cassette`` is where the trial's cassette was written
    (the driver's path for it once ``files`` are written)."""
    files: dict[str, bytes] = field(default_factory=dict)
    """Cassettes by file name, when the work ran away from the driver."""


_fixtures_lock = threading.Lock()
_SCRATCH = "/dev/shm" if os.access("/dev/shm", os.W_OK) else tempfile.gettempdir()
"""Where a worker's cassettes wait to be sent back: memory, where Linux offers it."""
SCRATCH_ENV = "REPLAY_SCRATCH"
"""Names another folder for the scratch folders (the tests give each test its own)."""


def scratch_root() -> Path:
    """The folder scratch folders go in: ``$REPLAY_SCRATCH``, else ``/dev/shm`` (else tmp)."""
    return Path(os.environ.get(SCRATCH_ENV) or _SCRATCH)


_PREFIX = "replay-work-"
"""Scratch folders are ``replay-work-<pid>-<random>``: whose they are outlives their owner."""


def sweep_scratch() -> None:
    """Remove the scratch folders of worker processes on this machine that have died.

    A worker that dies mid-trial (an agent that ends its own process) cannot
    remove the folders of its trials in flight; the next worker to start, and
    the driver when a run ends, remove them. (Processes are told apart by pid:
    containers that share ``/dev/shm`` but not their pids would see each
    other's workers as dead.)
    """
    for path in scratch_root().glob(f"{_PREFIX}*-*"):
        owner = path.name[len(_PREFIX) :].split("-", 1)[0]
        if owner.isdigit() and not _alive(int(owner)):
            shutil.rmtree(path, ignore_errors=True)


def _alive(pid: int) -> bool:
    """Whether process ``pid`` runs: a zombie (dead, not yet reaped by its parent) does not."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:  # someone else's process
        return True
    try:  # Linux: the state follows the command name in parentheses
        return Path(f"/proc/{pid}/stat").read_text().rpartition(")")[2].split()[0] != "Z"
    except (OSError, IndexError):  # no /proc (macOS): the signal said it exists
        return True


_held: list[Any] = []


def hold_patches() -> None:
    """Keep the recorder's interceptors in place for the life of this (worker) process."""
    if not _held:
        holder = patched()
        holder.__enter__()
        _held.append(holder)


def install_fixtures(blobs: Mapping[str, Blob]) -> None:
    """Make fixtures known to this process by source path (once per worker)."""
    with _fixtures_lock:
        for key, blob in blobs.items():
            if blob.data is not None:  # (Python 3.10 cannot deserialize: the file is read)
                ship(key, Fixture.from_bytes(blob.data, blob.source, blob.hash))


def blob(fixture: Fixture) -> Blob:
    """A fixture as it travels."""
    return Blob(fixture.source, fixture.hash, fixture.data)


def _agent(spec: RunSpec) -> Any:
    """The run's agent: its function, or its program (``--agent-cmd``)."""
    settings = spec.agent
    hosts = tuple(settings.allow_hosts)
    if settings.command:
        return AgentCommand(
            tuple(settings.command),
            settings.timeout,
            settings.resolved_isolation,
            settings.memory_mb,
            allow_hosts=hosts,
            allow_env=tuple(settings.allow_env),
            tasks=settings.pids,
        )
    if settings.entry and settings.isolation == "process":
        return ChildAgent(
            settings.entry,
            settings.timeout,
            memory_mb=settings.memory_mb,
            allow_hosts=hosts,
            allow_env=tuple(settings.allow_env),
            tasks=settings.pids,
        )
    return load_callable(spec.agent.entry) if spec.agent.entry else None


def _server_wall(spec: RunSpec) -> ServerWalls | None:
    """Walls for the run's started MCP servers, where its agent is walled."""
    settings = spec.agent
    started = any(server.command for server in settings.mcp_servers.values())
    if settings.resolved_isolation != "process" or not started:
        return None
    return ServerWalls(Caps(settings.memory_mb, settings.pids))


def run_work(work: Work, fixtures: Mapping[str, Blob] | None = None) -> list[Done]:
    """Run a batch of trials; every failure is an ``error`` trial, never an exception."""
    if fixtures:
        install_fixtures(fixtures)
    spec = work.spec
    mode = REGISTRY[spec.mode]
    agent = _agent(spec) if mode.runs_agent else None
    tools = load_callable(spec.agent.tools) if spec.agent.tools else None
    # patched(): held already in workers and in a driver running trials itself (then free).
    # A scratch folder only for cassettes that travel as bytes (a remote worker's).
    scratch: contextlib.AbstractContextManager[str] = contextlib.nullcontext("")
    if work.out is None or work.recorded:
        scratch = tempfile.TemporaryDirectory(prefix=f"{_PREFIX}{os.getpid()}-", dir=scratch_root())
    with patched(), scratch as tmp:
        out = Path(work.out or tmp)
        recorded = _recorded(work, Path(tmp))

        def steps(job: Job) -> Steps[TrialResult | _Failed]:
            if job.recorded is not None and str(job.recorded) in recorded:
                job = Job(job.case, job.index, recorded[str(job.recorded)])
            return _trial_steps(spec, job, mode, agent, tools, out, work.judge, work.faults)

        def done(job: Job, result: TrialResult | _Failed) -> Done:
            record = record_of(result)
            graded_file = recorded.get(str(job.recorded), job.recorded)
            graded = result.cassette if not isinstance(result, _Failed) else None
            if job.recorded is not None and (graded == graded_file or mode.per_recording):
                # What was graded: the driver's file.
                record = dataclasses.replace(record, cassette=str(job.recorded))
            files = {}
            if work.out is None:
                trial = out / cassette_name(job.case.id, job.index)
                for path in (trial, judge_cassette(trial)):
                    if path.exists():
                        files[path.name] = path.read_bytes()
                        path.unlink()
            return Done(job.case.id, job.index, record, files)

        if inspect.iscoroutinefunction(agent):
            # Async agents: every trial of the batch is a task on this process's one loop,
            # harness included, so no two threads fight over the GIL (see ``_async``).
            return wait_for(_concurrently(work, steps, done))

        def one(job: Job) -> Done:
            return done(job, drive(steps(job)))

        if work.threads <= 1 or len(work.jobs) == 1:
            return [one(job) for job in work.jobs]
        with ThreadPoolExecutor(max_workers=min(work.threads, len(work.jobs))) as pool:
            return list(pool.map(one, work.jobs))


async def _concurrently(
    work: Work,
    steps: Callable[[Job], Steps[TrialResult | _Failed]],
    done: Callable[[Job, TrialResult | _Failed], Done],
) -> list[Done]:
    slots = asyncio.Semaphore(max(1, work.threads))

    async def one(job: Job) -> Done:
        async with slots:
            return done(job, await drive_async(steps(job)))

    return list(await asyncio.gather(*(one(job) for job in work.jobs)))


def _recorded(work: Work, tmp: Path) -> dict[str, Path]:
    paths = {}
    for n, (original, data) in enumerate(work.recorded.items()):
        path = tmp / "recorded" / f"{n}.cassette"
        path.parent.mkdir(exist_ok=True)
        path.write_bytes(data)
        paths[original] = path
    return paths


_free: dict[str, list[World]] = {}
_free_lock = threading.Lock()


def _acquire(job: Job) -> World:
    """A world of the job's fixture that no other trial holds (made once, reset after)."""
    key = str(job.case.fixture)
    with _free_lock:
        free = _free.setdefault(key, [])
        if free:
            return free.pop()
    return load_fixture(job.case.fixture).open()


def _release(job: Job, world: World) -> None:
    with _free_lock:
        _free.setdefault(str(job.case.fixture), []).append(world)


def _plan(
    spec: RunSpec,
    job: Job,
    mode: Mode,
    agent: Any,
    tools: Any,
    out: Path,
    judge: Judge | None,
    faults: Sequence[Fault],
    world: World,
) -> TrialPlan:
    """The job's trial, as its mode runs it."""
    recorded = read_cassette(job.recorded) if job.recorded is not None else None
    user = None
    if job.case.user is not None and mode.runs_agent and spec.user.source != "agent":
        if spec.user.source == "frozen":
            if recorded is None:
                raise ConfigError(f"a frozen user needs the recorded trial of {job.case.id!r}")
            user = UserChannel(job.case.user, frozen=FrozenUser(recorded))
        else:
            url = spec.user.url or spec.llm.url or ""
            user = UserChannel(
                job.case.user, live=LiveUser(url, spec.user.model, spec.user.timeout)
            )
    every = [*job.case.faults, *faults] if mode.runs_agent else []
    return TrialPlan(
        case=job.case,
        mode=mode.name,
        out=out / cassette_name(job.case.id, job.index),
        index=job.index,
        agent=agent,
        tools=tools,
        recorded=recorded,
        llm=spec.llm.source,
        llm_url=spec.llm.url,
        model=spec.agent.model,
        settings=spec.agent.settings,
        allow_env=tuple(spec.agent.allow_env),
        allow_hosts=tuple(spec.agent.allow_hosts),
        mcp_servers=spec.agent.mcp_servers,
        server_wall=_server_wall(spec),
        ignore_hosts=(
            (*DEFAULT_IGNORE_HOSTS, *spec.llm.ignore_hosts)
            if spec.llm.default_ignore
            else tuple(spec.llm.ignore_hosts)
        ),
        ignore_fields=tuple(spec.llm.ignore_fields),
        faults=FaultInjector(every, spec.faults.seed, job.case.id, job.index) if every else None,
        user=user,
        world=world,
        judge=judge,
        prices={model: (float(p[0]), float(p[1])) for model, p in spec.llm.prices.items()},
        graders=tuple(spec.graders),
        secrets=tuple(spec.secrets()),
        redaction=spec.redaction.redaction() if spec.redaction.tool_paths else None,
        limits=spec.agent.limits() if mode.runs_agent else Limits(),
    )


def _trial_steps(
    spec: RunSpec,
    job: Job,
    mode: Mode,
    agent: Any,
    tools: Any,
    out: Path,
    judge: Judge | None,
    faults: Sequence[Fault],
) -> Steps[TrialResult | _Failed]:
    world: World | None = None
    try:
        world = _acquire(job)
        plan = _plan(spec, job, mode, agent, tools, out, judge, faults, world)
        result = yield from mode.steps(plan)
        if Guard.TIMEOUT in result.guards:  # an abandoned agent may still be in it: not reused
            world = None
        return result
    except KeyboardInterrupt:
        raise
    except BaseException as exc:  # a trial that raises (even SystemExit) is an error trial
        where = traceback.extract_tb(exc.__traceback__)[-1]
        said = f"{type(exc).__name__}: {exc} ({where.filename}:{where.lineno})"
        # A recording stopped by a value no cassette holds (a tool's 2**70): the agent's.
        unwritable = isinstance(exc, RecordingFailed) and not isinstance(exc.__cause__, OSError)
        return _Failed(job, said, Cause.AGENT if unwritable else Cause.HARNESS)
    finally:
        if world is not None:
            _release(job, world)


@dataclass(frozen=True, slots=True)
class _Failed:
    job: Job
    reason: str
    cause: Cause = Cause.HARNESS


def record_of(result: TrialResult | _Failed) -> TrialRecord:
    """What the store keeps of a trial: its verdict, usage, cause, tool use and grades."""
    if isinstance(result, _Failed):
        case = result.job.case
        return TrialRecord(
            case_id=case.id,
            idx=result.job.index,
            suite=case.suite,
            verdict=Verdict.ERROR,
            tags=tuple(case.tags),
            cause=result.cause,
            cause_detail=(result.reason,),
        )
    summary = result.trial.cassette.summary()
    case = cast("Case", result.trial.case)  # graders see a GradedCase; the runner ran a Case
    outcome, usage = result.outcome, summary.usage
    known = not usage.llm_calls_without_usage  # else unknown, never a count too low to notice
    return TrialRecord(
        case_id=result.case_id,
        idx=result.index,
        suite=case.suite,
        verdict=outcome.verdict,
        score=outcome.score,
        cassette=str(result.cassette),
        usage=TrialUsage(
            steps=usage.llm_calls or usage.tool_calls,
            input_tokens=usage.input_tokens if known else None,
            output_tokens=usage.output_tokens if known else None,
            latency=summary.timings.total,
            cost=result.trial.cost,
            duration=result.duration,
        ),
        tags=tuple(case.tags),
        cause=outcome.cause,
        cause_detail=tuple(outcome.detail) if outcome.cause else (),
        tool_use=result.tool_use,
        guards=tuple(Guard(guard) for guard in result.guards),
        grades=tuple(GradeRecord.of(grade) for grade in outcome.grades),
        expects=case.expects,
    )


def failed(job: Job, reason: str) -> Done:
    """An ``error`` trial the driver stores for a job that could not run."""
    return Done(job.case.id, job.index, record_of(_Failed(job, reason)))
