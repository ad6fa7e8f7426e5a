"""Where and how an agent runs: in this process, in a child process, or walled.

Walls are Linux namespaces through bubblewrap (``_isolation``), a seccomp
filter with a supervisor (``_seccomp``), forwarders to the trial's endpoints
(``_forward``); a zygote imports the agent once and forks a child per trial
(``_zygote``, ``_child``); ``_command`` is the agent as the runner sees it; ``_choice``
chooses where a run's agents go when asked for ``auto``; ``_servers`` walls a walled
run's third-party MCP servers too.
"""

import importlib as _importlib
import typing as _typing

if _typing.TYPE_CHECKING:
    from ._choice import choose_isolation, unavailable
    from ._command import AgentCommand, ChildAgent
    from ._isolation import Caps, allowed_host
    from ._servers import ServerWalls

# Each name loads on first use: a walled child (``python -m replay.agents._child``, one
# per zygote) imports what it runs, not the harness behind ``_choice`` and ``_command``.
_EXPORTS = {
    "AgentCommand": "._command",
    "Caps": "._isolation",
    "ChildAgent": "._command",
    "ServerWalls": "._servers",
    "allowed_host": "._isolation",
    "choose_isolation": "._choice",
    "unavailable": "._choice",
}

__all__ = [
    "AgentCommand",
    "Caps",
    "ChildAgent",
    "ServerWalls",
    "allowed_host",
    "choose_isolation",
    "unavailable",
]


def __getattr__(name: str) -> object:
    if name not in _EXPORTS:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = getattr(_importlib.import_module(_EXPORTS[name], __name__), name)
    globals()[name] = value
    return value
