"""What every mode shares: the recording around the agent, and the grading after it."""

from __future__ import annotations

import json
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from pathlib import Path

from recorder import (
    Cassette,
    ErrorEvent,
    Hooks,
    HttpEvent,
    Pins,
    Playback,
    Recording,
    RecordingFailed,
    Redaction,
    Secrets,
    ToolEvent,
    llm_call,
    read_cassette,
    record,
)

from ..cases import reference_for
from ..graders import (
    BUILT_IN,
    Cause,
    Grade,
    Outcome,
    SqliteWorld,
    Trial,
    TrialToolUse,
    Verdict,
    combine,
    resolve,
    run_graders,
    trial_tool_use,
)
from ..mcp import McpProxy, McpServerFailed, McpTools, is_type
from ..surroundings import PROCESSES, LlmProxy
from ..worlds import StateDiff, World, load_fixture
from ._drive import Steps
from ._environment import Environment
from ._guards import Guards, LimitExceeded
from ._plan import Prices, TrialPlan


@dataclass(frozen=True, slots=True)
class TrialResult:
    """One graded trial."""

    case_id: str
    index: int
    mode: str
    cassette: Path
    outcome: Outcome
    trial: Trial
    duration: float
    tool_use: TrialToolUse
    """What the agent did with its tools (stored with the trial, for the report)."""
    guards: tuple[str, ...] = ()
    """The limits that fired in the trial (``timeout``, ``memory``, ``llm_tokens``,
    ``tool_result_chars``); any makes it an ``error`` of cause ``limit``."""


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


def fresh_world(plan: TrialPlan) -> World:
    """A fresh world of the case's fixture: the plan's reset if it has one (of it), else opened."""
    fixture, world = load_fixture(plan.case.fixture), plan.world
    if world is not None and world.fixture is fixture:
        world.reset()
        return world
    return fixture.open()


def recorded_base_url(cassette: Cassette) -> str | None:
    """The LLM base URL a cassette's agent used: a frozen LLM answers "at" that address."""
    for event in cassette.events:
        if isinstance(event, HttpEvent) and (call := llm_call(event, request=False)) is not None:
            return call.base_url
    return None


def misses(*sources: object) -> tuple[str, ...]:
    """The distinct misses (unseen calls) of the trial's sources, in order."""
    found: list[str] = []
    for source in sources:
        found += [str(m) for m in getattr(source, "misses", ())]
    return tuple(dict.fromkeys(found))


def trial_redaction(plan: TrialPlan) -> Redaction:
    """What a trial's cassette redacts: what its recorded trial redacted, and the plan's."""
    given = plan.redaction or Redaction()
    if plan.recorded is None:
        return given
    held = Redaction.from_spec(plan.recorded.header.redaction)
    return Redaction(
        headers=held.headers | given.headers,
        query=held.query | given.query,
        body_paths=tuple(dict.fromkeys((*held.body_paths, *given.body_paths))),
        tool_paths=tuple(dict.fromkeys((*held.tool_paths, *given.tool_paths))),
    )


_DISK_ERRORS = frozenset({"OSError", "FileNotFoundError", "PermissionError", "IOError"})
"""A recording stopped by one of these failed for the harness's reasons (a full disk...)."""


def llm_down(cassette: Cassette) -> str | None:
    """Why the LLM failed the agent before it answered once, if it did: infrastructure.

    LLM calls that could not connect, or were answered 5xx (the trial's LLM proxy
    answers 502 for an LLM it cannot reach), and none answered in the whole trial: the
    agent never got a token, so its error is not its fault. One answered (a retry that
    got through), a miss (4xx), or a 5xx a fault injects (the trial tests the agent
    against it: not asked then) leave the error the agent's.
    """
    failed = None
    for event in cassette.events:
        if not isinstance(event, HttpEvent) or llm_call(event, request=False) is None:
            continue
        status = event.response.status if event.response is not None else None
        if status is not None and status < 500:
            return None  # answered once (or refused: a miss is not the LLM being down)
        if failed is None:
            what = f"HTTP {status}" if event.error is None else event.error.message
            failed = f"the LLM at {event.request.url} failed before it answered once: {what}"
    return failed


def run_agent(
    plan: TrialPlan,
    env: Environment,
    world: World,
    source: Playback | None,
    allowed_hosts: Iterable[str] | None,
    guards: Guards | None = None,
    secrets: Secrets | None = None,
    frozen: Iterable[str] = (),
) -> Steps[Cassette]:
    """Run the plan's agent inside a recording into ``plan.out``, under ``guards``.

    An agent that raises is recorded (an error event), not propagated;
    ``source`` answers the LLM (frozen), ``allowed_hosts`` (else any) may be reached.
    ``guards`` hold the plan's limits (see ``_guards``) and keep which fired.
    ``secrets`` (default: the plan's) are scrubbed from the cassette; the trial's
    replay sources share them, to match what was recorded scrubbed. ``frozen``
    names the channels answered from the recording besides the LLM's and HTTP's
    (``source``) and the user's: pinned (``pins.user["frozen"]``), for the manifest.
    """
    case, faults, agent = plan.case, plan.faults, plan.needs_agent()
    guards = guards if guards is not None else Guards(plan.limits)
    user = {"mode": plan.mode, **(faults.pins() if faults is not None else {})}
    if plan.recorded is not None:  # which recording this trial replays or answers from
        user["recorded"] = str(plan.recorded.path)
    answered = {*frozen, *(("llm", "http") if source is not None else ())}
    answered |= {"user"} if plan.user is not None and plan.user.frozen is not None else set()
    if answered:  # (the channels the capture manifest says were frozen, not captured)
        user["frozen"] = ",".join(sorted(answered))
    rec: Recording | None = None
    try:
        with record(
            plan.out,
            world=world.conn,
            case_id=case.id,
            trial=plan.index,
            pins=Pins(fixture_hash=world.fixture.hash, user=user),
            fixture_source=str(case.fixture),
            overwrite=True,
            secrets=secrets if secrets is not None else Secrets(plan.secrets),
            redaction=trial_redaction(plan),
            ignore_hosts=plan.ignore_hosts,
            strict=True,  # a trial whose recording failed is an error, never a short cassette
            hooks=Hooks(
                source=source,
                allowed_hosts=None if allowed_hosts is None else tuple(allowed_hosts),
                interpose=guards.interpose(faults.http if faults is not None else None),
                check_result=guards.check_result(),
                refuse_late=True,  # an agent left running past its deadline reaches nothing
            ),
        ) as rec:
            guards.recording = rec
            if faults is not None:
                faults.recording = rec
            instruction = case.instruction
            if env.user is not None:
                env.user.recording = rec
                instruction = env.user.opening()
            env._recording = rec
            servers: list[McpTools | McpProxy | LlmProxy] = [*env.mcp_servers.values()]
            servers += [s for s in (env.mcp, env.llm_proxy) if s is not None]
            for server in servers:
                server.recording = rec
            here = not getattr(agent, "own_deadline", False)  # (in this process: its children)
            if here:
                PROCESSES.begin()
            try:
                # (the driver resolves a coroutine, under the deadline as well)
                answer = yield guards.call(agent, instruction, env)
            finally:
                for server in servers:
                    server.close()
                guards.settle()
                if env.user is not None:
                    env.user.close()
                stopped = PROCESSES.end() if here else 0
                if stopped:
                    rec.warn(f"the agent left {stopped} processes running: they were stopped")
            if answer is not None:
                rec.answer(answer if isinstance(answer, str) else json.dumps(answer, default=str))
            else:
                rec.warn("the agent returned None: its answer is the last LLM reply, if any")
    except KeyboardInterrupt:
        raise
    except RecordingFailed:  # the harness's failure, not the agent's: the trial is an error
        raise
    except LimitExceeded as exc:  # recorded as an error event; the trial is flagged
        guards.fire(exc.guard, str(exc))
    except BaseException:  # recorded as an error event (SystemExit too); the verdict says error
        pass
    written = rec.cassette if rec is not None else None
    return written if written is not None else read_cassette(plan.out)


def _judging(plan: TrialPlan) -> Callable[[Trial], list[Grade]] | None:
    """The plan's judge, bound to the case's rubric and to where its calls are recorded."""
    judge = plan.judge
    if judge is None:
        return None
    return lambda trial: judge.grade(trial, plan.case.dimensions(), plan.judge_path)


def server_failures(cassette: Cassette) -> tuple[str, ...]:
    """What each third-party MCP server that failed in the trial said of it, once each."""
    failed = [
        e.error.message
        for e in cassette.events
        if isinstance(e, ToolEvent)
        and e.error is not None
        and is_type(e.error.type, McpServerFailed)
    ]
    return tuple(dict.fromkeys(failed))


def graded(
    plan: TrialPlan,
    cassette: Cassette,
    world: World,
    diff: StateDiff,
    missed: tuple[str, ...],
    started: float,
    guards: Guards | None = None,
) -> TrialResult:
    """Grade a trial: the case's graders, the run's, and its judge; a limit, or whose fault.

    A limit that fired (``guards``) makes the trial an ``error`` of cause ``limit``
    (its grades are kept), before anyone's fault: it cut the trial short.
    """
    case, user = plan.case, plan.user
    fired = dict(guards.fired) if guards is not None else {}
    summary = cassette.summary()
    trial = Trial(
        case,
        cassette,
        diff,
        SqliteWorld(world.conn),
        summary.final_answer,
        missed,
        trial_cost(cassette, plan.prices),
        reference_for(case, plan.tools),
        _judging(plan),
    )
    grades = run_graders(trial, resolve([*BUILT_IN, *case.grader_uses, *plan.graders]))
    outcome = combine(grades, case.scoring.value)
    if fired:
        outcome = Outcome(Verdict.ERROR, None, outcome.grades, Cause.LIMIT, tuple(fired.values()))
    elif user is not None and user.failure is not None:
        # The simulated user's fault: grading the cut conversation would blame the agent.
        outcome = Outcome(Verdict.ERROR, None, (), Cause.USER, (user.failure,))
    elif failed := server_failures(cassette):
        outcome = Outcome(Verdict.ERROR, None, outcome.grades, Cause.SERVER, failed)
    elif summary.stopped is not None:  # what the agent did after it is not in the cassette
        why = (summary.stopped.describe(),)
        # The disk, the file: the harness's; a value no cassette can hold: the agent's (tools).
        kind = summary.stopped.error.type.rsplit(".", 1)[-1]
        whose = Cause.HARNESS if kind in _DISK_ERRORS else Cause.AGENT
        outcome = Outcome(Verdict.ERROR, None, outcome.grades, whose, why)
    elif (
        summary.status == "error"
        and plan.faults is None
        and not missed
        and (down := llm_down(cassette))
    ):
        outcome = Outcome(Verdict.ERROR, None, outcome.grades, Cause.HARNESS, (down,))
    elif summary.status == "error" and outcome.verdict is not Verdict.UNSUPPORTED:
        errors = [e for e in cassette.events if isinstance(e, ErrorEvent)]
        detail = tuple(f"agent raised {e.error.type}: {e.error.message}" for e in errors)
        outcome = Outcome(
            Verdict.ERROR, None, outcome.grades, Cause.AGENT, detail or ("the agent raised",)
        )
    return TrialResult(
        case.id,
        plan.index,
        plan.mode,
        cassette.path,
        outcome,
        trial,
        time.perf_counter() - started,
        trial_tool_use(case, cassette),
        tuple(fired),
    )
