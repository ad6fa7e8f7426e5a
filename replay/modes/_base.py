"""A mode: the table of what each channel of a trial does, and the steps that run it.

Modes are entries in ``REGISTRY``; the runner, its workers, the CLI and the
pytest plugin read what a mode declares (whether it runs the agent, which
LLM sources it takes, whether it needs a recorded trial) and never compare
its name.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Literal

from recorder import ConfigError

from ..plugins import GROUPS, Registry
from ._drive import Steps
from ._plan import LlmSource, TrialPlan

if TYPE_CHECKING:
    from ._trial import TrialResult

Recorded = Literal["required", "for-frozen", "never"]


@dataclass(frozen=True)
class Mode:
    """One way to run a trial.

    Attributes:
        name: What ``RunSpec.mode`` (``replay run --mode``) calls it.
        summary: One line for ``--help`` and the README.
        channels: What each channel does (``llm``, ``tools``, ``http``, ``user``,
            ``world``): the mode's row of the channel table.
        steps: Runs a trial of a plan as steps (see ``_drive``).
        runs_agent: The agent runs (it needs ``agent.entry`` and ``agent.tools``, may meet
            injected faults and a simulated user); else only graders run.
        llm: The LLM sources it takes, its default first (empty: no LLM is called).
        recorded: When it needs a recorded trial: always (``required``), for the
            channels that answer from one (``for-frozen``), or ``never``.
        per_recording: Its trials are the recorded ones (one per cassette), not
            ``trials`` new ones per case.
        records: Its cassettes are recordings to replay later (the pytest
            plugin writes them where a test's cassette lives).
    """

    name: str
    summary: str
    channels: Mapping[str, str]
    steps: Callable[[TrialPlan], Steps[TrialResult]]
    runs_agent: bool = True
    llm: tuple[LlmSource, ...] = ("live", "frozen")
    recorded: Recorded = "for-frozen"
    per_recording: bool = False
    records: bool = False
    walled: bool = False
    """``AgentSettings(isolation="auto")`` (``replay run``'s default) puts its agent behind
    walls where the machine can (``replay.agents.choose_isolation``), and runs it in this
    process where it cannot."""

    @property
    def default_llm(self) -> LlmSource | None:
        """The LLM source used when none is asked for (None: no LLM is called)."""
        return self.llm[0] if self.llm else None

    def llm_source(self, asked: LlmSource | None) -> LlmSource | None:
        """The LLM source of a trial that asked for ``asked`` (None: the default).

        Raises:
            ConfigError: This mode does not take that source.
        """
        if asked is None or not self.llm:
            return self.default_llm
        if asked not in self.llm:
            raise ConfigError(
                f"{self.name} mode takes `llm.source` {' or '.join(self.llm)}, not {asked!r}"
            )
        return asked

    def needs_recorded(self, llm: LlmSource | None, frozen_user: bool) -> bool:
        """Whether a trial needs a recorded trial, given its LLM and user sources."""
        if self.recorded == "for-frozen":
            return llm == "frozen" or frozen_user
        return self.recorded == "required"


def _mode(name: str, obj: object) -> Mode:
    """What a plugin's ``agent_replay.modes`` entry point names, checked: a ``Mode``, so named."""
    if not isinstance(obj, Mode):
        raise ConfigError(f"it names a {type(obj).__name__}, not a replay.modes.Mode")
    if obj.name != name:
        raise ConfigError(f"its Mode is named {obj.name!r}: name the entry point {obj.name!r}")
    return obj


REGISTRY: Registry[Mode] = Registry("mode", GROUPS["modes"], _mode)
"""The modes by name, built-in ones first, then installed plugins' (``agent_replay.modes``):
``REGISTRY["offline"]`` (``ConfigError`` if unknown)."""


def register(mode: Mode) -> Mode:
    """Add ``mode``: ``RunSpec(mode=NAME)`` (``--mode NAME``) then runs it.

    Raises:
        ConfigError: Another mode has its name (``REGISTRY.unregister`` it first to replace it).
    """
    return REGISTRY.register(mode.name, mode)
