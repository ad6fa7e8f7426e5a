"""Where and how an agent runs: in this process, in a child process, or walled.

Walls are Linux namespaces through bubblewrap (``_isolation``), a seccomp
filter with a supervisor (``_seccomp``), forwarders to the trial's endpoints
(``_forward``); a zygote imports the agent once and forks a child per trial
(``_zygote``, ``_child``); ``_command`` is the agent as the runner sees it.
"""

from ._command import AgentCommand, ChildAgent
from ._isolation import allowed_host, require, unavailable

__all__ = ["AgentCommand", "ChildAgent", "allowed_host", "require", "unavailable"]
