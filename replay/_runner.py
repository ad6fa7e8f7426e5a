"""Running many trials of many cases under one set of pins, into the results store.

One driver loop over a ``concurrent.futures`` executor: trials run in worker
threads (each in its own recording context and its own in-memory world, so
they share no interception or world state), and the driver alone writes the
store. A trial that raises is an ``error`` trial; the run goes on. Resuming
a run skips the trials already stored.
"""

from __future__ import annotations

import json
import threading
import traceback
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor, as_completed
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any, Literal

from recorder import ConfigError, __version__, read_cassette

from ._calibration import MIN_AGREEMENT, MIN_LABELS, calibrated_judges
from ._case import Case, load_case
from ._faults import Fault, FaultInjector, parse_faults
from ._modes import Mode, TrialResult, load_callable, offline, review, sandbox
from ._store import Store
from ._user import FrozenUser, LiveUser, UserChannel
from ._world import World, load_fixture
from .graders import Judge, Verdict


@dataclass(frozen=True)
class RunSpec:
    """Everything that defines a run (stored with it, so it can be resumed)."""

    name: str
    cases: list[str]
    """Case file paths."""
    mode: Mode
    trials: int = 1
    agent: str | None = None
    """``module:function`` of the agent (offline and sandbox)."""
    tools: str | None = None
    """``module:function`` returning the tools for a world connection (offline and sandbox)."""
    llm: Literal["live", "frozen"] = "live"
    llm_url: str | None = None
    """The OpenAI-compatible endpoint the agent talks to when the LLM is live."""
    cassettes: str | None = None
    """Directory of recorded cassettes (review and offline), found by case id."""
    out: str | None = None
    """Directory for the trials' cassettes (default: beside the store)."""
    model: str | None = None
    settings: dict[str, Any] = field(default_factory=dict)
    concurrency: int = 1
    allow_env: list[str] = field(default_factory=list)
    """Environment variables named like secrets the agent may still see (sandbox)."""
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
    user: Literal["live", "frozen"] = "live"
    """Multi-turn cases: a live simulated user, or one answering from the cassettes."""
    user_url: str | None = None
    """OpenAI-compatible endpoint of the live simulated user (default: ``llm_url``)."""
    user_model: str = "user-sim"
    faults: list[str] = field(default_factory=list)
    """Faults (``KIND[:TOOL][@RATE]``) injected in every case's trials, after the case's own."""
    fault_seed: int = 0
    """Seeds each trial's fault draws (with the case id and trial index)."""


@dataclass(frozen=True, slots=True)
class _Job:
    case: Case
    index: int
    recorded: Path | None


def recorded_cassettes(directory: Path) -> dict[str, list[Path]]:
    """The cassettes in ``directory`` by the case id in their header, each list sorted."""
    found: dict[str, list[Path]] = {}
    for path in sorted(directory.glob("*.cassette")):
        try:
            header = read_cassette(path).header
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
    if spec.mode != "review" and spec.llm == "live" and not spec.llm_url:
        raise ConfigError(
            f"{spec.mode} with a live LLM needs --llm-url (the endpoint the agent uses)"
        )
    faults = parse_faults(spec.faults)
    if spec.mode == "review" and faults:  # (a case's own faults are moot in review: nothing runs)
        raise ConfigError("faults are injected in offline and sandbox runs, not in review")
    jobs = _jobs(spec, cases)
    judge = _judge(spec, cases, store)
    agent = tools = None
    if spec.mode != "review":
        if not spec.agent or not spec.tools:
            raise ConfigError(f"{spec.mode} mode needs --agent MOD:FN and --tools MOD:FN")
        agent, tools = load_callable(spec.agent), load_callable(spec.tools)
    elif spec.tools:  # review: the tools run only the reference solutions (matches_reference)
        tools = load_callable(spec.tools)
    if resume:
        if store.run(spec.name) is None:
            raise ConfigError(f"no run {spec.name!r} to resume in {store.path}")
    else:
        store.start_run(spec.name, asdict(spec), _pins(spec, cases))
    done = store.finished_trials(spec.name)
    todo = [j for j in jobs if (j.case.id, j.index) not in done]
    out = Path(spec.out) if spec.out else store.path.parent / "cassettes" / spec.name
    out.mkdir(parents=True, exist_ok=True)
    if on_trial:
        on_trial(None, 0, len(todo))
    pool = ThreadPoolExecutor(max_workers=max(1, spec.concurrency))
    try:
        futures = {pool.submit(_trial, spec, job, agent, tools, out, judge, faults) for job in todo}
        for count, future in enumerate(as_completed(futures), 1):
            futures.discard(future)  # let the finished trial (and its world view) go
            row, grades = _rows(future.result())
            store.add_trial(spec.name, row, grades)
            if on_trial:
                on_trial(f"{row['case_id']}#{row['idx']}: {row['verdict']}", count, len(todo))
    except BaseException:
        # Ctrl-C or a store failure: run nothing more; stored trials stay for --resume.
        pool.shutdown(wait=False, cancel_futures=True)
        raise
    pool.shutdown(wait=True)
    store.finish_run(spec.name)


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


def _jobs(spec: RunSpec, cases: Sequence[Case]) -> list[_Job]:
    talking = [c for c in cases if c.user is not None] if spec.mode != "review" else []
    if spec.mode == "sandbox":
        if spec.llm == "frozen" and not spec.cassettes:
            raise ConfigError("a frozen LLM needs --cassettes to answer from")
        if spec.user == "frozen" and talking and not spec.cassettes:
            raise ConfigError("a frozen user needs --cassettes to answer from")
    elif not spec.cassettes:
        raise ConfigError(f"{spec.mode} mode needs --cassettes DIR (the recorded trials)")
    if talking and spec.user == "live" and not (spec.user_url or spec.llm_url):
        raise ConfigError(
            f"case {talking[0].id!r} talks with a simulated user: give --user-url URL "
            "(or --llm-url), or --user frozen with --cassettes"
        )
    jobs = []
    by_case = recorded_cassettes(Path(spec.cassettes)) if spec.cassettes else {}
    for case in cases:
        recorded = by_case.get(case.id, [])
        frozen_user = spec.user == "frozen" and case in talking
        if (spec.mode != "sandbox" or spec.llm == "frozen" or frozen_user) and not recorded:
            raise ConfigError(f"no cassette for case {case.id!r} in {spec.cassettes}")
        count = len(recorded) if spec.mode == "review" else spec.trials
        jobs += [
            _Job(case, i, recorded[i % len(recorded)] if recorded else None) for i in range(count)
        ]
    return jobs


_local = threading.local()


def _thread_world(job: _Job) -> World | None:
    """This worker thread's world for the job's fixture: reused across its trials (reset)."""
    worlds: dict[str, World] = getattr(_local, "worlds", None) or {}
    _local.worlds = worlds
    key = str(job.case.fixture)
    if key not in worlds:
        worlds[key] = load_fixture(job.case.fixture).open()
    return worlds[key]


def _trial(
    spec: RunSpec,
    job: _Job,
    agent: Any,
    tools: Any,
    out: Path,
    judge: Judge | None,
    faults: Sequence[Fault],
) -> TrialResult | _Failed:
    path = out / f"{job.case.id}-{job.index}.cassette"
    every = [*job.case.faults, *faults]
    injector = FaultInjector(every, spec.fault_seed, job.case.id, job.index) if every else None
    user = None
    prices = {model: (float(p[0]), float(p[1])) for model, p in spec.prices.items()}
    common: dict[str, Any] = {
        "world": _thread_world(job),
        "index": job.index,
        "model": spec.model,
        "settings": spec.settings,
        "prices": prices,
        "judge": judge,
    }
    try:
        if job.case.user is not None and spec.mode != "review":
            if spec.user == "frozen":
                assert job.recorded is not None
                user = UserChannel(job.case.user, frozen=FrozenUser(read_cassette(job.recorded)))
            else:
                url = spec.user_url or spec.llm_url or ""
                user = UserChannel(job.case.user, live=LiveUser(url, spec.user_model))
        if spec.mode == "review":
            assert job.recorded is not None
            judge_out = path.with_name(f"{path.stem}.judge.cassette")
            return review(
                job.case,
                job.recorded,
                job.index,
                prices,
                common["world"],
                judge,
                judge_out,
                tools,
            )
        if spec.mode == "offline":
            assert job.recorded is not None
            return offline(
                job.case,
                agent,
                tools,
                read_cassette(job.recorded),
                path,
                llm_base_url=spec.llm_url or "http://127.0.0.1:9/v1",
                llm=spec.llm,
                faults=injector,
                user=user,
                **common,
            )
        frozen = read_cassette(job.recorded) if job.recorded and spec.llm == "frozen" else None
        return sandbox(
            job.case,
            agent,
            tools,
            path,
            llm_base_url=spec.llm_url or "http://127.0.0.1:9/v1",
            frozen=frozen,
            allow_env=spec.allow_env,
            faults=injector,
            user=user,
            **common,
        )
    except Exception as exc:  # a trial that raises is an error trial; the run goes on
        where = traceback.extract_tb(exc.__traceback__)[-1]
        return _Failed(job, f"{type(exc).__name__}: {exc} ({where.filename}:{where.lineno})")


@dataclass(frozen=True, slots=True)
class _Failed:
    job: _Job
    reason: str


def _rows(result: TrialResult | _Failed) -> tuple[dict[str, Any], list[dict[str, Any]]]:
    if isinstance(result, _Failed):
        case = result.job.case
        row = {
            "case_id": case.id,
            "idx": result.job.index,
            "suite": case.suite.value,
            "verdict": Verdict.ERROR.value,
            "tags": json.dumps(case.tags),
        }
        return row, [
            {"grader": "harness", "verdict": "error", "evidence": json.dumps([result.reason])}
        ]
    summary = result.trial.cassette.summary()
    case = result.trial.case
    row = {
        "case_id": result.case_id,
        "idx": result.index,
        "suite": case.suite.value,
        "verdict": result.outcome.verdict.value,
        "score": result.outcome.score,
        "cassette": str(result.cassette),
        "steps": summary.usage.llm_calls or summary.usage.tool_calls,
        "input_tokens": summary.usage.input_tokens,
        "output_tokens": summary.usage.output_tokens,
        "latency": summary.timings.total,
        "cost": result.trial.cost,
        "tags": json.dumps(case.tags),
    }
    grades = [
        {
            "grader": g.grader,
            "verdict": g.verdict.value,
            "score": g.score,
            "veto": int(g.veto),
            "evidence": json.dumps(list(g.evidence)),
            "advisory": int(g.advisory),
            "meta": json.dumps(dict(g.meta)) if g.meta else None,
        }
        for g in result.outcome.grades
    ]
    return row, grades


def _pins(spec: RunSpec, cases: Sequence[Case]) -> dict[str, Any]:
    return {
        "mode": spec.mode,
        "agent": spec.agent,
        "tools": spec.tools,
        "model": spec.model,
        "llm": spec.llm,
        "settings": spec.settings,
        "grader_version": __version__,
        "judge": {"model": spec.judge_model, "timeout": spec.judge_timeout}
        if spec.judge_url and not spec.no_judge
        else None,
        "faults": {"seed": spec.fault_seed, "run": spec.faults} if spec.faults else None,
        "user": {"source": spec.user, "model": spec.user_model if spec.user == "live" else None}
        if any(c.user is not None for c in cases)
        else None,
        "fixtures": {c.id: load_fixture(c.fixture).hash for c in cases},
    }
