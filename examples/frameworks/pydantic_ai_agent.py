"""A pydantic-ai agent on its OpenAI chat model."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any

from pydantic_ai import Agent
from pydantic_ai.models.openai import OpenAIChatModel
from pydantic_ai.providers.openai import OpenAIProvider

if TYPE_CHECKING:
    from replay import Environment

INSTRUCTIONS = "You keep a small shop's inventory. Check the stock before you reserve anything."
MODEL = "stub-inventory-1"


def build(
    functions: Sequence[Callable[..., Any]],
    *,
    base_url: str,
    api_key: str,
    model: str = MODEL,
    instructions: str = INSTRUCTIONS,
) -> Agent[None, str]:
    """The agent as the team wrote it: plain functions as its tools."""
    llm = OpenAIChatModel(model, provider=OpenAIProvider(base_url=base_url, api_key=api_key))
    return Agent(llm, instructions=instructions, tools=list(functions))


async def agent(instruction: str, env: Environment) -> str:
    """The entry point ``replay run --agent`` calls."""
    built = build(
        env.functions,
        base_url=env.llm_base_url,
        api_key=env.api_key,
        model=env.model or MODEL,
        instructions=env.settings.get("instructions", INSTRUCTIONS),
    )
    async with built:  # closes the model's HTTP client when done
        if env.settings.get("stream"):
            async with built.run_stream(instruction) as result:
                return await result.get_output()
        return (await built.run(instruction)).output
