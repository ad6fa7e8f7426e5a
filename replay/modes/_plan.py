"""One trial's plan: everything a mode needs to run and grade it, built once.

The runner's worker, the pytest plugin and the convenience functions
(``review``, ``offline``, ``sandbox``) each build a ``TrialPlan`` and hand it
to its mode; the mode builds the trial's channels from it and its graders
read it. Cassette names are made here and nowhere else.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal, Protocol

from recorder import Cassette, ConfigError, Redaction, Tool

from ..cases import Case, check_name
from ..graders import Dimension, Grade, Trial
from ..mcp import McpServer, ServerWall
from ..surroundings import FaultInjector, UserChannel
from ..worlds import World
from ._guards import Limits

if TYPE_CHECKING:
    from ._environment import Environment

Agent = Callable[[str, "Environment"], "str | Awaitable[str]"]
"""An agent: ``agent(instruction, env) -> answer``, sync or async (its coroutine is awaited)."""
ToolFactory = Callable[[sqlite3.Connection], Sequence[Tool[..., Any]]]
"""``make_tools(conn) -> tools``: the case's tools over one world's connection."""
Prices = Mapping[str, tuple[float, float]]
"""USD per million input and output tokens, by model id."""
LlmSource = Literal["live", "frozen"]


class RubricJudge(Protocol):
    """What grades a case's rubric.

    ``replay.graders.Judge`` (an LLM), or grades kept from before: ``replay regrade``
    without a judge replays the stored ones.
    """

    def grade(self, trial: Trial, dimensions: list[Dimension], cassette: Path) -> list[Grade]:
        """One ``judge:<dimension>`` grade per dimension; calls recorded into ``cassette``."""
        ...


NO_LLM_URL = "http://127.0.0.1:9/v1"
"""The LLM address an agent gets when the LLM is frozen and its recording named none."""


def cassette_name(case_id: str, index: int) -> str:
    """The file name of trial ``index`` of case ``case_id``'s cassette.

    Raises:
        ConfigError: ``case_id`` is not a name (``replay.cases.check_name``): one
            with ``/`` or ``..`` would put the file outside its folder.
    """
    return f"{check_name(case_id, 'case id')}-{index}.cassette"


def judge_cassette(trial_cassette: Path) -> Path:
    """Where the judge's calls on the trial recorded in ``trial_cassette`` go (beside it)."""
    return trial_cassette.with_name(f"{trial_cassette.stem}.judge.cassette")


@dataclass(frozen=True, kw_only=True)
class TrialPlan:
    """One trial, as its mode runs it.

    Attributes:
        case: The case.
        mode: The mode's name (``replay.modes.REGISTRY``).
        out: Where the trial's cassette goes (in review, nothing is recorded but
            the judge's calls, beside it).
        index: The trial's index among the case's trials.
        agent: The agent (modes that run one).
        tools: The case's tool factory (the agent's tools; ``matches_reference``
            runs the case's reference solution with them).
        recorded: The recorded trial this one replays, grades again, or answers
            its frozen channels from.
        llm: ``live`` (``llm_url``) or ``frozen`` (answered from ``recorded``);
            None: the mode's default.
        llm_url: The OpenAI-compatible endpoint a live LLM is reached at.
        model: Model id the agent is asked to use (``env.model``).
        settings: Everything else the agent is given (``env.settings``).
        allow_env: Variables named like secrets the agent may still see (sandbox).
        allow_hosts: ``(host, port)`` the agent may reach besides the LLM (sandbox).
        ignore_hosts: Hosts the trial's cassette ignores (None: the default list).
        ignore_fields: Request fields left out when the agent's HTTP is matched to
            ``recorded`` (``recorder.Playback``), besides the case's.
        faults: This trial's fault injector.
        user: The simulated user of a multi-turn case.
        world: A world of the case's fixture to reset and use (None: one is opened).
        judge: The LLM judge of the case's rubric.
        prices: Model prices, for the trial's cost.
        graders: Graders added to the case's own.
        server_wall: Walls for the third-party servers started (a walled run's).
        mcp_servers: Third-party MCP servers the agent uses, by name
            (``env.mcp_servers``): started per trial behind a recording proxy where
            the mode runs tools, answered from the recording offline.
        limits: What the trial may use: the agent's deadline, its LLM tokens, the
            size of a tool result (``replay.modes._guards``; default: no limit).
        judge_out: Where the judge's calls are recorded (None: beside ``out``).
        secrets: Values scrubbed from everything the trial records, besides the
            credentials its recording learns (``recorder.record(secrets=)``).
        redaction: What the trial's cassette redacts (None: what ``recorded`` did,
            else the defaults).
    """

    case: Case
    mode: str
    out: Path
    index: int = 0
    agent: Agent | None = None
    tools: ToolFactory | None = None
    recorded: Cassette | None = None
    llm: LlmSource | None = None
    llm_url: str | None = None
    model: str | None = None
    settings: Mapping[str, Any] = field(default_factory=dict)
    allow_env: Sequence[str] = ()
    allow_hosts: Sequence[tuple[str, int]] = ()
    ignore_hosts: Sequence[str] | None = None
    ignore_fields: Sequence[str] = ()
    faults: FaultInjector | None = None
    user: UserChannel | None = None
    world: World | None = None
    judge: RubricJudge | None = None
    prices: Prices | None = None
    graders: Sequence[str] = ()
    mcp_servers: Mapping[str, McpServer] = field(default_factory=dict)
    server_wall: ServerWall | None = None
    limits: Limits = field(default_factory=Limits)
    secrets: Sequence[str] = ()
    redaction: Redaction | None = None

    judge_out: Path | None = None
    """Where the judge's calls are recorded (None: beside ``out``, ``judge_cassette(out)``)."""

    @property
    def judge_path(self) -> Path:
        """Where the judge's calls on this trial are recorded."""
        return self.judge_out or judge_cassette(self.out)

    def needs_tools(self) -> ToolFactory:
        """The case's tool factory, which this plan's mode cannot do without.

        Raises:
            ConfigError: The plan has none.
        """
        if self.tools is None:
            raise ConfigError(f"{self.mode} of case {self.case.id!r} needs the case's tools")
        return self.tools

    def needs_agent(self) -> Agent:
        """The agent, which this plan's mode runs.

        Raises:
            ConfigError: The plan has none.
        """
        if self.agent is None:
            raise ConfigError(f"{self.mode} of case {self.case.id!r} needs an agent to run")
        return self.agent

    def needs_recorded(self) -> Cassette:
        """The recorded trial, which this plan's mode cannot do without.

        Raises:
            ConfigError: The plan has none.
        """
        if self.recorded is None:
            raise ConfigError(
                f"{self.mode} of case {self.case.id!r} needs the recorded trial (a cassette)"
            )
        return self.recorded
