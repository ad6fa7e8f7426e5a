"""What a trial puts around the agent besides its world and its MCP servers.

The simulated user, the LLM proxy, frozen tool answers, injected faults,
hidden secrets, the loopback servers they stand on, and the processes an in-process
agent leaves running (stopped when its trial ends).
"""

from ._faults import LLM_KINDS, Fault, FaultInjector, is_llm_request, parse_faults
from ._llm_proxy import LlmProxy
from ._loopback import LoopbackServer, stop_serving
from ._player import ReplayedToolError, ToolPlayer
from ._processes import TRACKER as PROCESSES
from ._secrets import hidden_secrets
from ._user import FrozenUser, LiveUser, UserChannel, UserSpec

__all__ = [
    "LLM_KINDS",
    "PROCESSES",
    "Fault",
    "FaultInjector",
    "FrozenUser",
    "LiveUser",
    "LlmProxy",
    "LoopbackServer",
    "ReplayedToolError",
    "ToolPlayer",
    "UserChannel",
    "UserSpec",
    "hidden_secrets",
    "is_llm_request",
    "parse_faults",
    "stop_serving",
]
