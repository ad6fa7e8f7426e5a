"""Agents built on the frameworks teams ship, run by agent-replay as they are.

Each module holds an ordinary agent of its framework (openai-agents with the
Responses model and with the chat-completions model, pydantic-ai, LangGraph)
over the same inventory world, and the few lines that let ``replay run`` and
the pytest plugin drive it: ``agent(instruction, env)`` hands the framework
``env.functions`` (the trial's tools as plain functions) to wrap with its own
decorator, and points it at ``env.llm_base_url``.
"""

from .policy import ANSWER, INSTRUCTION, reserve_policy
from .tools import make_tools

__all__ = ["ANSWER", "INSTRUCTION", "make_tools", "reserve_policy"]
