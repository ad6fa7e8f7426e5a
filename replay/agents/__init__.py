"""Where and how an agent runs: in this process, in a child process, or walled.

Walls are Linux namespaces through bubblewrap (``_isolation``), a seccomp
filter with a supervisor (``_seccomp``), forwarders to the trial's endpoints
(``_forward``); a zygote imports the agent once and forks a child per trial
(``_zygote``, ``_child``); ``_command`` is the agent as the runner sees it; ``_choice``
chooses where a run's agents go when asked for ``auto``; ``_servers`` walls a walled
run's third-party MCP servers too.
"""

from ._choice import choose_isolation, unavailable
from ._command import AgentCommand, ChildAgent
from ._isolation import Caps, allowed_host
from ._servers import ServerWalls

__all__ = [
    "AgentCommand",
    "Caps",
    "ChildAgent",
    "ServerWalls",
    "allowed_host",
    "choose_isolation",
    "unavailable",
]
