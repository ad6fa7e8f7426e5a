"""``offline``: the agent runs; every tool call is answered from the recorded trial.

Tool calls are answered by (tool name, canonical arguments), identical calls
in recorded order, and each answered call's recorded delta is applied to a
fresh world. A call the cassette cannot answer raises ``FixtureUnsupported``
in the agent *and* is kept on the trial (verdict ``unsupported``). No tool
function ever runs. The LLM is ``frozen`` (served from the cassette) or ``live``.
"""

from __future__ import annotations

import inspect
import time
from collections.abc import Callable, Iterable, Mapping
from pathlib import Path
from typing import Any, Literal

from recorder import Cassette, ConfigError, Playback, Secrets, Tool, ToolEvent, tool

from ..cases import Case
from ..graders import Judge
from ..mcp import McpServer, replayed_proxy
from ..surroundings import FaultInjector, ReplayedToolError, ToolPlayer, UserChannel
from ..worlds import StateDiff, World
from ._base import Mode
from ._drive import Steps, driven
from ._environment import dispatcher, environment
from ._guards import Guards, Limits
from ._plan import NO_LLM_URL, Agent, Prices, ToolFactory, TrialPlan
from ._trial import TrialResult, fresh_world, graded, misses, recorded_base_url, run_agent


def _steps(plan: TrialPlan) -> Steps[TrialResult]:
    started = time.perf_counter()
    guards = Guards(plan.limits)
    recorded = plan.needs_recorded()
    world = fresh_world(plan)
    originals = list(plan.needs_tools()(world.conn))  # their schemas and effects: none runs
    secrets = Secrets(plan.secrets)  # one set: what the recording learns, the sources match by
    player = ToolPlayer(recorded, secrets=secrets)
    replayed = dispatcher({t.name: _replayed_tool(t, player, world) for t in originals})
    frozen = MODE.llm_source(plan.llm) == "frozen"
    fields = (*plan.case.ignore_fields, *plan.ignore_fields)
    source = (
        Playback(recorded, secrets=secrets, refuse=True, ignore_fields=fields) if frozen else None
    )
    url = (recorded_base_url(recorded) if source else None) or plan.llm_url or NO_LLM_URL
    wrap = plan.faults.wrap if plan.faults is not None else _same
    writes = {e.name for e in recorded.events if isinstance(e, ToolEvent) and e.effect == "write"}
    servers = {
        name: replayed_proxy(name, lambda t: _replayed_tool(t, player, world), wrap, writes)
        for name in plan.mcp_servers
    }
    env = environment(
        originals, replayed, plan.faults, url, plan.model, plan.settings, plan.user, servers
    )
    answered = ("tools", "mcp")  # every tool call, a server's too, answered from the recording
    cassette = yield from run_agent(plan, env, world, source, None, guards, secrets, answered)
    missed = misses(player, source, plan.user.frozen if plan.user else None)
    diff = StateDiff.from_delta(cassette.summary().state_diff or {})
    return graded(plan, cassette, world, diff, missed, started, guards)


def _same(dispatch: Any) -> Any:
    return dispatch


def _replayed_tool(
    original: Tool[..., Any], player: ToolPlayer, world: World
) -> Callable[..., Any]:
    """``original`` answered from the cassette, its arguments completed as the real one's are."""

    def answer(**arguments: Any) -> Any:
        event = player.answer(original.name, arguments)
        world.apply(event.delta or {})
        if event.error is not None:
            raise ReplayedToolError(event.error.type, event.error.message)
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


MODE = Mode(
    "offline",
    "run the agent with every tool call answered from its recording",
    {
        "llm": "frozen from the recording (default), or live",
        "tools": "frozen: answered from the recording, never run",
        "http": "frozen with the LLM, else live",
        "user": "frozen from the recording, or live",
        "world": "the fixture with the deltas of the recorded calls the agent repeats",
    },
    _steps,
    llm=("frozen", "live"),
    recorded="required",
)


def offline_steps(
    case: Case,
    agent: Agent,
    tools: ToolFactory,
    recorded: Cassette,
    out: Path,
    *,
    llm_base_url: str | None = None,
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
    graders: Iterable[str] = (),
    mcp_servers: Mapping[str, McpServer] | None = None,
    limits: Limits | None = None,
) -> Steps[TrialResult]:
    """Replay ``recorded`` with ``agent``: tools answered from it, the LLM ``frozen`` or ``live``.

    As steps (see ``replay.modes``); ``offline`` runs them here. The trial is
    recorded into ``out``; with a ``judge``, its calls go beside it. A live LLM
    is at ``llm_base_url`` (a frozen one answers at the recorded address).
    ``limits`` (a deadline, caps on LLM tokens and tool results) make the trial
    an ``error`` when one fires.

    Raises:
        ConfigError: A live LLM without ``llm_base_url``.
    """
    if llm == "live" and llm_base_url is None:
        raise ConfigError("offline with a live LLM needs llm_base_url (the endpoint to use)")
    plan = TrialPlan(
        case=case,
        mode=MODE.name,
        out=out,
        index=index,
        agent=agent,
        tools=tools,
        recorded=recorded,
        llm=llm,
        llm_url=llm_base_url,
        model=model,
        settings=dict(settings or {}),
        ignore_hosts=None if ignore_hosts is None else tuple(ignore_hosts),
        faults=faults,
        user=user,
        world=world,
        judge=judge,
        prices=prices,
        graders=tuple(graders),
        mcp_servers=dict(mcp_servers or {}),
        limits=limits or Limits(),
    )
    return MODE.steps(plan)


offline = driven(offline_steps)
