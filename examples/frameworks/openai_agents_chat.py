"""openai-agents with the chat-completions model (``OpenAIChatCompletionsModel``)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from .openai_agents_responses import chat_model, run_with

if TYPE_CHECKING:
    from replay import Environment


async def agent(instruction: str, env: Environment) -> str:
    """The entry point ``replay run --agent`` calls."""
    return await run_with(chat_model, instruction, env)
