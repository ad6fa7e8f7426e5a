"""Running many trials of many cases under one set of pins, into the results store.

``execute`` checks the run (cases, graders, agent, faults), pins it, and hands
its trials to one driver loop (``_driver``) over a ``concurrent.futures``
executor (``_backend``: this process's threads, worker processes, Ray or
Dask): it submits trials to ``_work.run_work``, stores what finishes (the
driver alone writes the store), and resubmits what a crashed worker lost. A trial that raises is an
``error`` trial; the run goes on. Resuming a run skips the trials stored.
"""

from __future__ import annotations

import dataclasses
import inspect
import shlex
import warnings
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from recorder import (
    Cassette,
    ConfigError,
    Secrets,
    __version__,
    patched,
    read_cassette,
    read_header,
)

from .. import graders
from ..agents import choose_isolation
from ..cases import Case, inside, load_case
from ..graders import Judge
from ..mcp import McpServer
from ..modes import REGISTRY, Mode, load_callable
from ..results import Store, calibrated_judges
from ..surroundings import LLM_KINDS, Fault, parse_faults
from ..worlds import load_fixture
from ._backend import backend
from ._driver import Driver
from ._reach import check_llm
from ._spec import RunSpec
from ._stored import hide_server, hide_settings
from ._work import Job, blob, sweep_scratch


def _check_graders(spec: RunSpec, cases: list[Case]) -> None:
    """Every grader the run and its cases name is registered, before any trial runs.

    (The agent's and tools' modules are imported by now: their graders count.)

    Raises:
        ConfigError: A module does not import, or a name is registered by nobody.
    """
    for case in cases:
        try:
            graders.resolve([*spec.graders, *case.grader_uses], strict=True)
        except ConfigError as exc:
            raise ConfigError(f"case {case.id}: {exc}") from None


def recorded_cassettes(
    directory: Path, damaged: dict[Path, str] | None = None
) -> dict[str, list[Path]]:
    """The cassettes in ``directory`` by the case id in their header, each list sorted.

    A file whose header cannot be read belongs to no case; it is kept in ``damaged``
    (path -> why), for the error of a case left without a cassette to name.
    """
    found: dict[str, list[Path]] = {}
    for path in sorted(directory.glob("*.cassette")):
        try:
            header = read_header(path)  # (the events are read by the trial that uses them)
        except Exception as exc:  # a foreign or damaged file in the folder belongs to no case
            if damaged is not None:
                damaged[path] = str(exc).splitlines()[0] if str(exc) else type(exc).__name__
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
    on_warning: Callable[[str], None] | None = None,
) -> None:
    """Run (or resume) every trial of ``spec`` not yet in ``store``.

    ``on_trial(description, done, total)`` is told of progress: first with None, 0,
    then once per stored trial, described as ``CASE #INDEX VERDICT (first reason)``
    (``refund-4812 #2 fail (state: ...)``; no reason for a pass).
    ``on_warning(message)`` is told what the run accepts but doubts, before any
    trial runs: a recorded cassette that holds no events (``<file>: the cassette
    holds no events; ...``); without it, each is a ``UserWarning``.

    Raises:
        ConfigError: Bad specification (mode needs, unknown agent/tools...).
        CaseFileError: A case file is malformed.
    """
    if not spec.cases:
        raise ConfigError("no case files given")
    if spec.trials < 1:
        raise ConfigError(f"`trials` must be at least 1 (got {spec.trials})")
    cases = [load_case(p) for p in spec.cases]
    seen: dict[str, str] = {}
    for case in cases:
        if case.id in seen:
            raise ConfigError(f"case id {case.id!r} is used by {seen[case.id]} and {case.path}")
        seen[case.id] = str(case.path)
    mode = REGISTRY[spec.mode]
    llm = mode.llm_source(spec.llm.source)
    if mode.runs_agent and llm == "live" and not spec.llm.url:
        raise ConfigError(
            f"{mode.name} with a live LLM needs `llm.url` (the endpoint the agent uses)"
        )
    faults = parse_faults(spec.faults.faults)
    if faults and not mode.runs_agent:  # (a case's own faults are moot: no agent runs)
        raise ConfigError(f"faults are injected where the agent runs, not in {mode.name}")
    caps = {"`agent.max_llm_tokens`": spec.agent.max_llm_tokens}
    caps["`agent.max_tool_result_chars`"] = spec.agent.max_tool_result_chars
    if not mode.runs_agent and (given := [name for name, cap in caps.items() if cap]):
        raise ConfigError(f"{' and '.join(given)}: caps on the agent, moot in {mode.name}")
    jobs = _jobs(spec, mode, cases)
    replays_tools = mode.runs_agent and mode.recorded == "required"  # (offline)
    for message in _doubtful_recordings(jobs, replays_tools):
        if on_warning is None:
            warnings.warn(message, stacklevel=2)
        else:
            on_warning(message)
    judge = _judge(spec, cases, store)
    if mode.runs_agent and (not (spec.agent.entry or spec.agent.command) or not spec.agent.tools):
        raise ConfigError(
            f"{mode.name} mode needs `agent.entry` MOD:FN (or `agent.command` PROGRAM) and "
            "`agent.tools` MOD:FN"
        )
    if spec.agent.entry and spec.agent.command:
        raise ConfigError(
            "give the agent as `agent.entry` MOD:FN or as `agent.command` PROGRAM, not both"
        )
    isolation, unwalled = choose_isolation(spec.agent.isolation, mode)  # auto: for this mode
    spec = dataclasses.replace(spec, agent=dataclasses.replace(spec.agent, isolation=isolation))
    if unwalled is not None:
        if on_warning is None:
            warnings.warn(unwalled, stacklevel=2)
        else:
            on_warning(unwalled)
    if spec.executor.kind == "local":  # fail early; on a cluster the code may live on workers only
        for named in (spec.agent.entry if mode.runs_agent else None, spec.agent.tools):
            if named:
                load_callable(named)
        if mode.runs_agent and spec.agent.entry:
            _check_agent(spec.agent.entry)
        if mode.runs_agent and spec.agent.tools and not spec.agent.mcp_servers:
            _check_fault_tools(spec.agent.tools, faults, cases)
        _check_graders(spec, cases)
    if mode.runs_agent and llm == "live" and spec.llm.url and spec.llm.check:
        check_llm(spec.llm.url)  # (last: down, no trial runs rather than every agent blamed)
    if resume:
        if store.run(spec.name) is None:
            raise ConfigError(f"no run {spec.name!r} to resume in {store.path}")
    else:
        store.start_run(spec.name, spec.to_stored(), _pins(spec, mode, cases))
    done = store.finished_trials(spec.name)
    todo = [j for j in jobs if (j.case.id, j.index) not in done]
    out = Path(spec.out) if spec.out else store.path.parent / "cassettes" / spec.name
    if not spec.out:  # (the name is checked as the spec is made; the path, where it is used)
        inside(store.path.parent / "cassettes", out, f"run name {spec.name!r}")
    out.mkdir(parents=True, exist_ok=True)
    if on_trial:
        on_trial(None, 0, len(todo))
    fixtures = {str(c.fixture): c.fixture for c in cases}
    runner = backend(spec, lambda: {k: blob(load_fixture(p)) for k, p in fixtures.items()})
    try:
        with patched():  # trials run here (in-process): interceptors installed once
            Driver(spec, runner, judge, tuple(faults), out, store, on_trial).run(todo)
    finally:  # also on Ctrl-C or a store failure: stored trials stay for --resume
        runner.close()
        sweep_scratch()  # the scratch folders of workers that died on this machine
    store.finish_run(spec.name)


def _judge(spec: RunSpec, cases: Sequence[Case], store: Store) -> Judge | None:
    if not spec.judge.enabled:
        return None
    judged = [c.id for c in cases if c.rubric]
    if not spec.judge.url:
        if judged:
            raise ConfigError(
                f"case {', '.join(judged)} has a rubric: give `judge.url` URL `judge.model` "
                "MODEL (an OpenAI-compatible endpoint), or `judge.enabled=False` to skip rubric "
                "grading"
            )
        return None
    if not spec.judge.model:
        raise ConfigError("`judge.url` needs `judge.model` (the judge model to ask for)")
    return Judge(
        spec.judge.url,
        spec.judge.model,
        timeout=spec.judge.timeout,
        calibrated=calibrated_judges(store, spec.judge.min_labels, spec.judge.min_agreement),
    )


def _jobs(spec: RunSpec, mode: Mode, cases: Sequence[Case]) -> list[Job]:
    llm = mode.llm_source(spec.llm.source)
    ours = mode.runs_agent and spec.user.source != "agent"  # (else the agent's own user)
    talking = [c for c in cases if c.user is not None] if ours else []
    frozen_user = spec.user.source == "frozen" and bool(talking)
    if frozen_user and mode.recorded == "never":
        raise ConfigError(f"{mode.name} mode talks with a live user only: give `user.source=live`")
    if mode.needs_recorded(llm, frozen_user) and not spec.cassettes:
        if mode.recorded == "required":
            raise ConfigError(f"{mode.name} mode needs `cassettes` DIR (the recorded trials)")
        source = "LLM" if llm == "frozen" else "user"
        raise ConfigError(f"a frozen {source} needs `cassettes` to answer from")
    if talking and spec.user.source == "live" and not (spec.user.url or spec.llm.url):
        raise ConfigError(
            f"case {talking[0].id!r} talks with a simulated user: give `user.url` URL "
            "(or `llm.url`), `user.source=frozen` with `cassettes`, or `user.source=agent` "
            "(--user agent) if the agent simulates its own user"
        )
    jobs = []
    damaged: dict[Path, str] = {}
    by_case = recorded_cassettes(Path(spec.cassettes), damaged) if spec.cassettes else {}
    for case in cases:
        needs = mode.needs_recorded(llm, spec.user.source == "frozen" and case in talking)
        recorded = by_case.get(case.id, []) if needs else []
        if needs and not recorded:
            unread = "; ".join(f"{p.name}: {why}" for p, why in damaged.items())
            raise ConfigError(
                f"no cassette for case {case.id!r} in {spec.cassettes}"
                + (f" (unreadable, skipped: {unread})" if unread else "")
            )
        count = len(recorded) if mode.per_recording else spec.trials
        jobs += [
            Job(case, i, recorded[i % len(recorded)] if recorded else None) for i in range(count)
        ]
    return jobs


def _doubtful_recordings(jobs: Sequence[Job], replays_tools: bool = False) -> list[str]:
    """A warning for each recorded cassette the jobs use that is cut short or holds no events.

    (A recording cut short — its recording killed — is replayed as far as it goes: a
    trial that needs more is ``unsupported`` as if the agent changed. A recording of
    nothing: offline, every call the agent makes is then unsupported; in review, the
    fixture as it was is graded.) With ``replays_tools`` (offline), one too for each
    whose LLM asked for tool calls that no tool event holds (its capture manifest's
    ``tools`` channel): the verdicts rest on its LLM traffic alone. A cassette that
    cannot be read here is left to the trial that reads it to say so.
    """
    out = []
    for path in dict.fromkeys(j.recorded for j in jobs if j.recorded is not None):
        try:
            cassette = read_cassette(path)
        except Exception:  # the trial reads it, and its error says why
            continue
        if cassette.truncation:
            out.append(f"{path}: {cassette.truncation}; its trials replay what it kept")
        if not cassette.events:
            out.append(
                f"{path}: the cassette holds no events; its trials replay a recording of "
                "nothing (was the session recorded?)"
            )
        elif replays_tools and (unseen := _unwrapped(cassette)):
            out.append(f"{path}: {unseen}; offline, its trials' verdicts rest on its LLM alone")
    return out


def _unwrapped(cassette: Cassette) -> str | None:
    """What the cassette's manifest says of its tools, when the LLM asked for unseen ones."""
    tools = next(c for c in cassette.manifest() if c.channel == "tools")
    return tools.detail if tools.state == "not seen" and "asked for" in tools.detail else None


def grader_pins(spec: RunSpec, cases: Sequence[Case]) -> dict[str, Any]:
    """Each grader the run uses: its version and, per case, the arguments it is given.

    (Arguments are a list per case: a case may use one grader twice.)

    (Graders of modules a cluster's workers alone can import are pinned without a version.)
    """
    out: dict[str, Any] = {}
    for case in cases:
        uses: list[graders.GraderUse] = []
        entries: list[str | graders.GraderUse] = [*graders.BUILT_IN, *case.grader_uses]
        for entry in [*entries, *spec.graders]:
            try:
                uses += graders.resolve([entry])
            except ConfigError:  # its module is on the workers only: pinned by name
                name = entry.name if isinstance(entry, graders.GraderUse) else entry
                uses.append(graders.GraderUse(name.rpartition(":")[2]))
        for use in uses:
            pin = out.setdefault(use.name, {"version": graders.VERSIONS.get(use.name)})
            if use.args:
                pin.setdefault("args", {}).setdefault(case.id, []).append(dict(use.args))
    return out


def _check_agent(named: str) -> None:
    """An agent is a function of (instruction, env), not any callable (a class, say)."""
    agent = load_callable(named)
    if inspect.isclass(agent):
        raise ConfigError(f"{named!r} is a class, not an agent: give a function (instruction, env)")
    try:
        inspect.signature(agent).bind(None, None)
    except TypeError:
        raise ConfigError(
            f"{named!r} does not take (instruction, env): an agent is called with both"
        ) from None
    except ValueError:  # a builtin without a signature: let the trial say
        pass


def _check_fault_tools(tools: str, faults: Sequence[Fault], cases: Sequence[Case]) -> None:
    """A fault aimed at a tool names one the agent has (else it would never fire)."""
    for case in cases:
        aimed = {f.tool for f in [*faults, *case.faults] if f.kind not in LLM_KINDS}
        if not aimed - {"*"}:
            continue
        world = load_fixture(case.fixture).open()
        try:
            names = {t.name for t in load_callable(tools)(world.conn)}
        except Exception as exc:  # the factory's own failure, said before any trial
            raise ConfigError(
                f"{tools} failed making case {case.id!r}'s tools: {type(exc).__name__}: {exc}"
            ) from None
        finally:
            world.close()
        if unknown := sorted(aimed - names - {"*"}):
            raise ConfigError(
                f"fault on {', '.join(unknown)}: case {case.id!r} has no such tool "
                f"(its tools: {', '.join(sorted(names))})"
            )


def _pinned(server: McpServer) -> dict[str, Any]:
    """A server as its run's pins show it: what is not a default, secrets hidden."""
    defaults = {f.name: f.default for f in dataclasses.fields(McpServer)}
    return {
        k: v
        for k, v in hide_server(server).items()
        if v not in (None, [], {}) and v != defaults.get(k)
    }


def _pins(spec: RunSpec, mode: Mode, cases: Sequence[Case]) -> dict[str, Any]:
    """What the run's verdicts depend on, as stored and reported: no secret in them."""
    pins = {
        "mode": mode.name,
        "agent": shlex.join(spec.agent.command) if spec.agent.command else spec.agent.entry,
        "isolation": spec.agent.isolation,
        "tools": spec.agent.tools,
        "model": spec.agent.model,
        "llm": mode.llm_source(spec.llm.source),
        "settings": hide_settings(spec.agent.settings),
        "mcp_servers": {n: _pinned(s) for n, s in spec.agent.mcp_servers.items()} or None,
        "grader_version": __version__,
        "graders": grader_pins(spec, cases),
        "judge": {"model": spec.judge.model, "timeout": spec.judge.timeout}
        if spec.judge.url and spec.judge.enabled
        else None,
        "faults": (
            {"seed": spec.faults.seed, "run": spec.faults.faults} if spec.faults.faults else None
        ),
        "user": {
            "source": spec.user.source,
            "model": spec.user.model if spec.user.source == "live" else None,
        }
        if any(c.user is not None for c in cases)
        else None,
        "fixtures": {c.id: load_fixture(c.fixture).hash for c in cases},
        "redaction": {"tool_paths": spec.redaction.tool_paths}
        if spec.redaction.tool_paths
        else None,
        "ignore_fields": sorted(spec.llm.ignore_fields) or None,  # (what offline matches on)
    }
    return dict(Secrets(spec.secrets()).scrub_value(pins))
