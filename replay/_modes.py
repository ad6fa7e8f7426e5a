"""The three replay modes, one agent contract, one grader input.

- ``review``: nothing runs; the recorded outcome (fixture + recorded net
  delta, final answer) is graded again.
- ``offline``: the agent runs; every tool call is answered from a recorded
  cassette by (tool name, canonical arguments), identical calls in recorded
  order, and the recorded delta is applied to a fresh world. A call the
  cassette cannot answer raises ``FixtureUnsupported`` in the agent *and* is
  kept on the trial (verdict ``unsupported``). No tool function ever runs.
  The LLM is ``frozen`` (served from the cassette) or ``live``.
- ``sandbox``: a fresh world; tools really execute; HTTP may reach only the
  LLM endpoint's host.

Every mode writes a cassette for the trial and grades the same ``Trial``.

The agent contract: ``agent(instruction: str, env: Environment) -> str``
(the final answer), named as ``module:function``, or the same ``async def``
(see ``_async``); see ``Environment``.
"""

from __future__ import annotations

import functools
import importlib
import inspect
import json
import os
import sqlite3
import sys
import time
from collections.abc import Awaitable, Callable, Generator, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal, ParamSpec, TypeVar
from urllib.parse import urlsplit

from recorder import (
    Cassette,
    ConfigError,
    ErrorEvent,
    FixtureError,
    HttpEvent,
    Pins,
    Playback,
    Recording,
    Tool,
    llm_call,
    read_cassette,
    record,
    tool,
)

from ._async import resolved
from ._case import Case
from ._diff import StateDiff
from ._faults import FaultInjector
from ._player import ReplayedToolError, ToolPlayer
from ._reference import reference_for
from ._secrets import hidden_secrets
from ._user import UserChannel
from ._world import World, load_fixture
from .graders import (
    BUILT_IN,
    Grade,
    Judge,
    Outcome,
    SqliteWorld,
    Trial,
    Verdict,
    combine,
    resolve,
    run_graders,
)

Mode = Literal["review", "offline", "sandbox"]
T = TypeVar("T")
P = ParamSpec("P")
Steps = Generator[Any, Any, T]
"""A trial as steps: it yields the agent's answer to resolve (a coroutine for async agents)."""
ToolFactory = Callable[[sqlite3.Connection], Sequence[Tool[..., Any]]]


@dataclass
class Environment:
    """What an agent gets besides its instruction.

    Attributes:
        tools: Tool specs in OpenAI ``tools`` format, to hand to the model.
        call_tool: ``call_tool(name, arguments) -> result`` (an awaitable for an async
            tool); raises what the tool raises (in offline mode, ``FixtureUnsupported``
            for an unseen call).
        llm_base_url: Base URL of the OpenAI-compatible endpoint to use.
        model: Model id to ask for (``--model``), or None for the agent's default.
        settings: Everything else given with ``--set`` (temperature, prompt...).
        api_key: Key to send; the endpoint under test decides whether it matters.
        user: The simulated user of a multi-turn case (its opening message is the
            instruction), or None.
        functions: The same tools as Python functions, for an agent framework to wrap
            with its own decorator (``function_tool(f)``, ``Agent(tools=[...])``,
            ``StructuredTool.from_function``): each has its tool's name, signature,
            annotations and docstring, and is a coroutine function where the tool
            is, so the framework builds the schema it always does. Calling one is
            ``call_tool`` (recorded; offline, answered from the cassette).
    """

    tools: list[dict[str, Any]]
    call_tool: Callable[[str, Mapping[str, Any]], Any]
    llm_base_url: str
    model: str | None = None
    settings: dict[str, Any] = field(default_factory=dict)
    api_key: str = "sk-replay"
    user: UserChannel | None = None
    """Multi-turn cases: ``user.say(text)`` returns the user's answer (None: it has ended)."""
    functions: Sequence[Callable[..., Any]] = field(default_factory=list)


Agent = Callable[[str, Environment], "str | Awaitable[str]"]
"""An agent: sync, or async (its coroutine is awaited by the trial's driver)."""


def load_callable(spec: str) -> Callable[..., Any]:
    """Import ``module:function``.

    Raises:
        ConfigError: The spec is malformed or does not resolve to a callable.
    """
    module_name, _, attr = spec.partition(":")
    if os.getcwd() not in sys.path:  # as pytest and uvicorn do: the project's own modules
        sys.path.insert(0, os.getcwd())
    if not module_name or not attr:
        raise ConfigError(f"{spec!r} is not module:function (e.g. examples.shop:agent)")
    try:
        target: Any = importlib.import_module(module_name)
        for part in attr.split("."):
            target = getattr(target, part)
    except (ImportError, AttributeError) as exc:
        raise ConfigError(f"cannot load {spec!r}: {exc}") from None
    if not callable(target):
        raise ConfigError(f"{spec!r} is not callable")
    return target  # type: ignore[no-any-return]


@dataclass(frozen=True, slots=True)
class TrialResult:
    """One graded trial."""

    case_id: str
    index: int
    mode: Mode
    cassette: Path
    outcome: Outcome
    trial: Trial
    duration: float


def as_function(
    original: Tool[..., Any], call_tool: Callable[[str, Mapping[str, Any]], Any]
) -> Callable[..., Any]:
    """``original`` as a plain function calling ``call_tool``, for a framework to wrap.

    It has the tool's name, signature (``Tool.signature``: annotations
    resolved, so a framework's ``get_type_hints`` needs no globals of ours)
    and docstring, and is ``async`` when the tool is: a framework builds from
    it the schema it builds from the tool's own function, and awaits it when
    it should. Arguments are bound against that signature, positionally or by
    name, as the framework passes them.
    """
    name, signature = original.name, original.signature

    def arguments(args: tuple[Any, ...], kwargs: dict[str, Any]) -> dict[str, Any]:
        bound = signature.bind(*args, **kwargs)
        bound.apply_defaults()
        out: dict[str, Any] = {}
        for key, value in bound.arguments.items():
            if signature.parameters[key].kind is inspect.Parameter.VAR_KEYWORD:
                out.update(value)
            else:
                out[key] = value
        return out

    def call(*args: Any, **kwargs: Any) -> Any:
        return call_tool(name, arguments(args, kwargs))

    async def call_async(*args: Any, **kwargs: Any) -> Any:
        result = call(*args, **kwargs)
        return await result if inspect.isawaitable(result) else result

    function: Any = call_async if inspect.iscoroutinefunction(original) else call
    function.__signature__ = signature
    function.__annotations__ = {
        p.name: p.annotation for p in signature.parameters.values() if p.annotation is not p.empty
    }
    if signature.return_annotation is not signature.empty:
        function.__annotations__["return"] = signature.return_annotation
    target = inspect.unwrap(original)
    function.__name__ = function.__qualname__ = name
    function.__doc__ = getattr(target, "__doc__", None) or original.description  # as written
    function.__module__ = getattr(target, "__module__", __name__)
    return call_async if function is call_async else call


def _environment(
    tools: Sequence[Tool[..., Any]],
    dispatch: Callable[[str, Mapping[str, Any]], Any],
    faults: FaultInjector | None,
    llm_base_url: str,
    model: str | None,
    settings: Mapping[str, Any] | None,
    user: UserChannel | None,
) -> Environment:
    """The agent's environment, alike in sandbox and offline.

    ``tools``' schemas, ``dispatch`` (faults injected) to call them, the same
    as functions, and the LLM endpoint and settings.
    """
    if faults is not None:
        dispatch = faults.wrap(dispatch)
    return Environment(
        [t.openai_schema() for t in tools],
        dispatch,
        llm_base_url,
        model,
        dict(settings or {}),
        user=user,
        functions=_Functions(tools, dispatch),
    )


class _Functions(Sequence[Callable[..., Any]]):
    """``env.functions``, built on first use.

    Most agents never ask, and each costs a signature read (its annotations
    evaluated) per tool per trial.
    """

    def __init__(
        self, tools: Sequence[Tool[..., Any]], call_tool: Callable[[str, Mapping[str, Any]], Any]
    ) -> None:
        self._tools, self._call_tool = tools, call_tool
        self._built: list[Callable[..., Any]] | None = None

    def _all(self) -> list[Callable[..., Any]]:
        if self._built is None:
            self._built = [as_function(t, self._call_tool) for t in self._tools]
        return self._built

    def __getitem__(self, index: Any) -> Any:
        return self._all()[index]

    def __len__(self) -> int:
        return len(self._tools)

    def __repr__(self) -> str:
        return repr(self._all())


def _dispatcher(
    tools: Sequence[Tool[..., Any]] | Mapping[str, Callable[..., Any]],
) -> Callable[[str, Mapping[str, Any]], Any]:
    by_name = dict(tools) if isinstance(tools, Mapping) else {t.name: t for t in tools}

    def call_tool(name: str, arguments: Mapping[str, Any]) -> Any:
        if name not in by_name:
            raise LookupError(f"unknown tool {name!r}; the environment has {', '.join(by_name)}")
        return by_name[name](**arguments)

    return call_tool


Prices = Mapping[str, tuple[float, float]]
"""USD per million input and output tokens, by model id."""


def trial_cost(cassette: Cassette, prices: Prices | None) -> float | None:
    """What a trial's LLM calls cost, or None when it cannot be known.

    None when a model called has no price, or a call reported no token usage
    (unknown usage is never counted as free).
    """
    if not prices:
        return None
    total = 0.0
    for event in cassette.events:
        if isinstance(event, HttpEvent) and (call := llm_call(event, request=False)) is not None:
            price = prices.get(call.model or "")
            if price is None or not call.usage_known:
                return None
            total += (call.input_tokens * price[0] + call.output_tokens * price[1]) / 1e6
    return total


def _world_for(case: Case, world: World | None) -> World:
    """A fresh world of the case's fixture: ``world`` reset if given (and of it), else opened."""
    fixture = load_fixture(case.fixture)
    if world is not None and world.fixture is fixture:
        world.reset()
        return world
    return fixture.open()


def review(
    case: Case,
    cassette_path: Path,
    index: int = 0,
    prices: Prices | None = None,
    world: World | None = None,
    judge: Judge | None = None,
    judge_out: Path | None = None,
    tools: ToolFactory | None = None,
    graders: Sequence[str] = (),
) -> TrialResult:
    """Grade a recorded trial again: nothing runs.

    ``tools`` (the case's tool factory) lets ``matches_reference`` run the
    case's reference solution.

    With a ``judge``, the case's rubric is judged and the judge's calls are
    recorded into ``judge_out`` (required then: the recorded cassette's
    folder is left alone).
    """
    started = time.perf_counter()
    cassette = read_cassette(cassette_path)
    summary = cassette.summary()
    fixture = load_fixture(case.fixture)
    recorded_on = cassette.header.fixture_hash
    if recorded_on is not None and recorded_on != fixture.hash:
        raise FixtureError(
            f"{cassette_path} was recorded on another world (fixture hash {recorded_on}, "
            f"this case's is {fixture.hash})",
            path=str(case.fixture),
        )
    if cassette.header.case_id not in (None, case.id):
        raise ConfigError(
            f"{cassette_path} records case {cassette.header.case_id!r}, not {case.id!r}"
        )
    world = _world_for(case, world)
    delta = summary.state_diff or {}
    world.apply(delta)
    diff = StateDiff.from_delta(delta)
    if judge is not None and judge_out is None:
        raise ConfigError("review with a judge needs judge_out (where to record its calls)")
    return _graded(
        case,
        index,
        "review",
        cassette,
        world,
        diff,
        (),
        started,
        prices,
        judge,
        judge_out,
        tools=tools,
        graders=graders,
    )


def sandbox_steps(
    case: Case,
    agent: Agent,
    tools: ToolFactory,
    out: Path,
    *,
    llm_base_url: str,
    index: int = 0,
    model: str | None = None,
    settings: Mapping[str, Any] | None = None,
    frozen: Cassette | None = None,
    allow_env: Iterable[str] = (),
    prices: Prices | None = None,
    world: World | None = None,
    judge: Judge | None = None,
    faults: FaultInjector | None = None,
    user: UserChannel | None = None,
    ignore_hosts: Iterable[str] | None = None,
    graders: Sequence[str] = (),
) -> Steps[TrialResult]:
    """Run the agent against a fresh world with real tools; record and grade the trial.

    As steps: it yields the agent's answer (a coroutine, for async agents) for
    its driver to resolve (``drive``, ``drive_async``); ``sandbox`` drives it.

    Environment variables named like secrets are hidden from the agent unless
    listed in ``allow_env``. With a ``judge``, the case's rubric is judged; its
    calls are recorded beside ``out`` (``<name>.judge.cassette``).
    """
    started = time.perf_counter()
    world = _world_for(case, world)
    live_tools = list(tools(world.conn))
    source = Playback(frozen) if frozen is not None else None
    if frozen is not None:
        llm_base_url = recorded_base_url(frozen) or llm_base_url
    env = _environment(
        live_tools, _dispatcher(live_tools), faults, llm_base_url, model, settings, user
    )
    host = urlsplit(llm_base_url).hostname or ""
    with hidden_secrets(allow_env):
        cassette = yield from _run_steps(
            case, agent, env, world, out, index, "sandbox", source, (host,), faults, ignore_hosts
        )
    missed = [*(source.misses if source else []), *_user_misses(user)]
    misses = tuple(dict.fromkeys(str(m) for m in missed))
    diff = StateDiff.from_delta(cassette.summary().state_diff or {})
    return _graded(
        case,
        index,
        "sandbox",
        cassette,
        world,
        diff,
        misses,
        started,
        prices,
        judge,
        user=user,
        tools=tools,
        graders=graders,
    )


def offline_steps(
    case: Case,
    agent: Agent,
    tools: ToolFactory,
    recorded: Cassette,
    out: Path,
    *,
    llm_base_url: str,
    llm: Literal["frozen", "live"] = "frozen",
    index: int = 0,
    model: str | None = None,
    settings: Mapping[str, Any] | None = None,
    prices: Prices | None = None,
    world: World | None = None,
    judge: Judge | None = None,
    faults: FaultInjector | None = None,
    user: UserChannel | None = None,
    ignore_hosts: Iterable[str] | None = None,
    graders: Sequence[str] = (),
) -> Steps[TrialResult]:
    """``offline``, as steps (see ``sandbox_steps``)."""
    started = time.perf_counter()
    world = _world_for(case, world)
    originals = list(tools(world.conn))  # for their schemas and effects only: nothing runs
    player = ToolPlayer(recorded)
    replayed = _dispatcher({t.name: _replayed_tool(t, player, world) for t in originals})
    env = _environment(originals, replayed, faults, llm_base_url, model, settings, user)
    source = Playback(recorded) if llm == "frozen" else None
    if source is not None:
        env.llm_base_url = recorded_base_url(recorded) or llm_base_url
    cassette = yield from _run_steps(
        case, agent, env, world, out, index, "offline", source, None, faults, ignore_hosts
    )
    misses = [*player.misses, *(source.misses if source else []), *_user_misses(user)]
    diff = StateDiff.from_delta(cassette.summary().state_diff or {})
    return _graded(
        case,
        index,
        "offline",
        cassette,
        world,
        diff,
        tuple(dict.fromkeys(str(m) for m in misses)),
        started,
        prices,
        judge,
        user=user,
        tools=tools,
        graders=graders,
    )


def _driven(steps: Callable[P, Steps[T]]) -> Callable[P, T]:
    """The plain function of a steps function: the same arguments, driven here."""

    @functools.wraps(steps)
    def run(*args: P.args, **kwargs: P.kwargs) -> T:
        return drive(steps(*args, **kwargs))

    run.__name__ = run.__qualname__ = steps.__name__.removesuffix("_steps")
    return run


sandbox = _driven(sandbox_steps)
offline = _driven(offline_steps)


def drive(steps: Steps[T]) -> T:
    """Run steps here: what they yield is resolved in this thread and sent back.

    A coroutine runs on the shared loop (see ``_async``); an exception is
    thrown back in.
    """
    return _drive(steps, resolved)


def _drive(steps: Steps[T], resolve: Callable[[Any], Any]) -> T:
    try:
        value = next(steps)
        while True:
            try:
                result = resolve(value)
            except BaseException as exc:  # the agent's: its recording records it
                value = steps.throw(exc)
            else:
                value = steps.send(result)
    except StopIteration as stop:
        return stop.value  # type: ignore[no-any-return]


async def drive_async(steps: Steps[T]) -> T:
    """Run steps on the running event loop: what they yield is awaited here."""
    try:
        value = next(steps)
        while True:
            try:
                result = await value if inspect.isawaitable(value) else value
            except BaseException as exc:
                value = steps.throw(exc)
            else:
                value = steps.send(result)
    except StopIteration as stop:
        return stop.value  # type: ignore[no-any-return]


def _user_misses(user: UserChannel | None) -> list[Any]:
    return list(user.frozen.misses) if user is not None and user.frozen is not None else []


def recorded_base_url(cassette: Cassette) -> str | None:
    """The LLM base URL a cassette's agent used: a frozen LLM answers "at" that address."""
    for event in cassette.events:
        if isinstance(event, HttpEvent) and (call := llm_call(event, request=False)) is not None:
            return call.base_url
    return None


def _replayed_tool(
    original: Tool[..., Any], player: ToolPlayer, world: World
) -> Callable[..., Any]:
    """``original`` answered from the cassette, its arguments completed as the real one's are."""

    def answer(**arguments: Any) -> Any:
        event = player.answer(original.name, arguments)
        world.apply(event.delta or {})
        if event.error is not None:
            raise ReplayedToolError(f"{event.error.type}: {event.error.message}")
        return event.result

    async def answer_async(**arguments: Any) -> Any:
        return answer(**arguments)

    if inspect.iscoroutinefunction(original):  # offline looks like the sandbox to the agent
        replayed_async = tool(answer_async, name=original.name, writes=original.writes)

        async def call_async(*args: Any, **kwargs: Any) -> Any:
            return await replayed_async(**original.arguments(*args, **kwargs))

        return call_async

    replayed = tool(answer, name=original.name, writes=original.writes)

    def call(*args: Any, **kwargs: Any) -> Any:
        return replayed(**original.arguments(*args, **kwargs))

    return call


def _run_steps(
    case: Case,
    agent: Agent,
    env: Environment,
    world: World,
    out: Path,
    index: int,
    mode: Mode,
    source: Playback | None,
    allowed_hosts: tuple[str, ...] | None,
    faults: FaultInjector | None = None,
    ignore_hosts: Iterable[str] | None = None,
) -> Steps[Cassette]:
    """Run the agent inside a recording; an agent that raises is recorded, not propagated."""
    user = {"mode": mode, **(faults.pins() if faults is not None else {})}
    rec: Recording | None = None
    try:
        with record(
            out,
            world=world.conn,
            case_id=case.id,
            trial=index,
            pins=Pins(fixture_hash=world.fixture.hash, user=user),
            fixture_source=str(case.fixture),
            overwrite=True,
            source=source,
            allowed_hosts=allowed_hosts,
            ignore_hosts=ignore_hosts,
            interpose=faults.http if faults is not None else None,
        ) as rec:
            if faults is not None:
                faults.recording = rec
            instruction = case.instruction
            if env.user is not None:
                env.user.recording = rec
                instruction = env.user.opening()
            answer = yield agent(instruction, env)  # the driver resolves a coroutine
            if answer is not None:
                rec.answer(answer if isinstance(answer, str) else json.dumps(answer, default=str))
    except KeyboardInterrupt:
        raise
    except BaseException:  # recorded as an error event (SystemExit too); the verdict says error
        pass
    written = rec.cassette if rec is not None else None
    return written if written is not None else read_cassette(out)


def _graded(
    case: Case,
    index: int,
    mode: Mode,
    cassette: Cassette,
    world: World,
    diff: StateDiff,
    misses: tuple[str, ...],
    started: float,
    prices: Prices | None = None,
    judge: Judge | None = None,
    judge_out: Path | None = None,
    *,
    user: UserChannel | None = None,
    tools: ToolFactory | None = None,
    graders: Sequence[str] = (),
) -> TrialResult:
    summary = cassette.summary()
    cost = trial_cost(cassette, prices)
    trial = Trial(
        case,
        cassette,
        diff,
        SqliteWorld(world.conn),
        summary.final_answer,
        misses,
        cost,
        reference_for(case, tools),
    )
    grades = run_graders(trial, resolve([*BUILT_IN, *case.graders, *graders]))
    if judge is not None and case.rubric and summary.status != "error":
        out = judge_out or cassette.path.with_name(f"{cassette.path.stem}.judge.cassette")
        grades += judge.grade(trial, case.dimensions(), out)
    outcome = combine(grades, case.scoring.value)
    if user is not None and user.failure is not None:
        # The simulated user's fault: grading the cut conversation would blame the agent.
        outcome = Outcome(Verdict.ERROR, None, (Grade("user", Verdict.ERROR, (user.failure,)),))
    elif summary.status == "error" and outcome.verdict is not Verdict.UNSUPPORTED:
        errors = [e for e in cassette.events if isinstance(e, ErrorEvent)]
        detail = tuple(f"agent raised {e.error.type}: {e.error.message}" for e in errors)
        agent_grade = Grade("agent", Verdict.ERROR, detail or ("the agent raised",))
        outcome = Outcome(Verdict.ERROR, None, (*outcome.grades, agent_grade))
    return TrialResult(
        case.id, index, mode, cassette.path, outcome, trial, time.perf_counter() - started
    )
