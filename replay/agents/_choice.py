"""Where a run's agent runs: the isolation asked for, with ``auto`` chosen for the mode."""

from __future__ import annotations

from typing import Literal

from recorder import ConfigError

from ..modes import Mode
from ._isolation import unavailable

Isolation = Literal["none", "process"]


def choose_isolation(asked: str, mode: Mode) -> tuple[Isolation, str | None]:
    """The isolation of a run's agents in ``mode``, and a warning when ``auto`` found no walls.

    ``auto`` is ``process`` for a mode that asks for walls (``Mode.walled``) where
    this machine can build them (``unavailable``), else ``none``; ``none`` and
    ``process`` are as asked.

    Raises:
        ConfigError: ``process`` for a mode that runs the agent, where walls are
            unavailable; or no isolation of that name.
    """
    if asked == "auto":
        why = unavailable() if mode.walled else None
        if why is None:
            return ("process" if mode.walled else "none"), None
        return "none", (
            f"{mode.name}: no walls on this machine ({why}): each agent runs in this process "
            "(`agent.isolation=none`; see the README's known limits)"
        )
    if asked == "process":
        why = unavailable() if mode.runs_agent else None
        if why is not None:
            raise ConfigError(
                f"`agent.isolation=process` is unavailable: {why}; use `agent.isolation=none`"
            )
        return "process", None
    if asked == "none":
        return "none", None
    raise ConfigError(f"`agent.isolation` is {asked!r}: use auto, none or process")
