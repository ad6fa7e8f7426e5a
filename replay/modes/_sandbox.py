"""``sandbox`` and ``record``: the agent runs against a fresh world with its real tools.

``sandbox`` is a re-execution under watch: environment variables named like
secrets are hidden from the agent (unless allowed) and HTTP may reach only
the LLM endpoint's host. ``record`` captures a session as it really runs
(any host, the process's environment): its cassettes are the recordings the
other modes replay. Both run the agent in this process; neither isolates it.
"""

from __future__ import annotations

import contextlib
import time
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

from recorder import Cassette, Playback

from ..cases import Case
from ..graders import Judge
from ..mcp import McpServer, live_proxy
from ..surroundings import FaultInjector, UserChannel, hidden_secrets
from ..worlds import StateDiff, World
from ._base import Mode
from ._drive import Steps, driven
from ._environment import dispatcher, environment
from ._guards import Guards, Limits
from ._plan import NO_LLM_URL, Agent, Prices, ToolFactory, TrialPlan
from ._trial import TrialResult, fresh_world, graded, misses, recorded_base_url, run_agent


def _live_steps(plan: TrialPlan, mode: Mode, watched: bool) -> Steps[TrialResult]:
    started = time.perf_counter()
    guards = Guards(plan.limits)
    world = fresh_world(plan)
    tools = list(plan.needs_tools()(world.conn))
    frozen = mode.llm_source(plan.llm) == "frozen"
    fields = (*plan.case.ignore_fields, *plan.ignore_fields)
    source = Playback(plan.needs_recorded(), refuse=True, ignore_fields=fields) if frozen else None
    url = (recorded_base_url(source.cassette) if source else None) or plan.llm_url or NO_LLM_URL
    wrap = plan.faults.wrap if plan.faults is not None else _same
    servers = {
        n: live_proxy(n, s, world, wrap, plan.server_wall) for n, s in plan.mcp_servers.items()
    }
    env = environment(
        tools, dispatcher(tools), plan.faults, url, plan.model, plan.settings, plan.user, servers
    )
    allowed = {host for host, _ in plan.allow_hosts}
    allowed |= {"localhost"} if "127.0.0.1" in allowed else set()  # (as it was given)
    hosts = (urlsplit(url).hostname or "", *sorted(allowed)) if watched else None
    with hidden_secrets(plan.allow_env) if watched else contextlib.nullcontext():
        cassette = yield from run_agent(plan, env, world, source, hosts, guards)
    missed = misses(source, plan.user.frozen if plan.user else None)
    diff = StateDiff.from_delta(cassette.summary().state_diff or {})
    return graded(plan, cassette, world, diff, missed, started, guards)


def _same(dispatch: Any) -> Any:
    return dispatch


def _sandbox(plan: TrialPlan) -> Steps[TrialResult]:
    return _live_steps(plan, MODE, watched=True)


def _record(plan: TrialPlan) -> Steps[TrialResult]:
    return _live_steps(plan, RECORD, watched=False)


MODE = Mode(
    "sandbox",
    "run the agent against a fresh world with its real tools, under watch",
    {
        "llm": "live (default), or frozen from the recording",
        "tools": "really executed, recorded with their deltas",
        "http": "the LLM endpoint's host only",
        "user": "live, or frozen from the recording",
        "world": "a fresh copy of the fixture",
    },
    _sandbox,
    walled=True,
)
RECORD = Mode(
    "record",
    "record the agent as it really runs: its cassettes are recordings to replay",
    {
        "llm": "live, recorded",
        "tools": "really executed, recorded with their deltas",
        "http": "live, recorded",
        "user": "live",
        "world": "a fresh copy of the fixture",
    },
    _record,
    llm=("live",),
    recorded="never",
    records=True,
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
    allow_hosts: Iterable[tuple[str, int]] = (),
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
    """Run ``agent`` against a fresh world with real tools; record the trial into ``out``.

    As steps (see ``replay.modes``); ``sandbox`` runs them here. The LLM is
    ``llm_base_url``, or answers from ``frozen``. Environment variables named
    like secrets are hidden from the agent unless listed in ``allow_env``; HTTP
    reaches the LLM's host and the hosts of ``allow_hosts`` (``(host, port)``) only.
    With a ``judge``, the case's rubric is judged; its calls are recorded
    beside ``out`` (``<name>.judge.cassette``). ``limits`` (a deadline, caps on
    LLM tokens and tool results) make the trial an ``error`` when one fires.
    """
    plan = TrialPlan(
        case=case,
        mode=MODE.name,
        out=out,
        index=index,
        agent=agent,
        tools=tools,
        recorded=frozen,
        llm="frozen" if frozen is not None else "live",
        llm_url=llm_base_url,
        model=model,
        settings=dict(settings or {}),
        allow_env=tuple(allow_env),
        allow_hosts=tuple(allow_hosts),
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


sandbox = driven(sandbox_steps)
