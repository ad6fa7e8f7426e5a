"""MCP for a trial: worlds' tools served, agents' servers proxied, framed as JSON-RPC.

The recording proxy stands between the agent and its MCP servers (third-party
servers started upstream); a world's own tools are served over MCP too.
"""

from ._proxy import McpProxy, is_type, live_proxy, replayed_proxy
from ._server import McpServer
from ._tools import McpTools
from ._upstream import MESSAGE_BYTES, SAFE_ENV, McpServerFailed, ServerWall

__all__ = [
    "MESSAGE_BYTES",
    "SAFE_ENV",
    "McpProxy",
    "McpServer",
    "McpServerFailed",
    "McpTools",
    "ServerWall",
    "is_type",
    "live_proxy",
    "replayed_proxy",
]
