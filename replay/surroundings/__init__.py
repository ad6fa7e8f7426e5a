"""What a trial puts around the agent besides its world and its MCP servers.

The simulated user, the LLM proxy, frozen tool answers, injected faults,
hidden secrets, and the loopback servers they stand on.
"""
