"""MCP for a trial: worlds' tools served, agents' servers proxied, framed as JSON-RPC.

The recording proxy stands between the agent and its MCP servers (third-party
servers started upstream); a world's own tools are served over MCP too.
"""
