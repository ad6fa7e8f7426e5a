"""openai-agents with its default model, the Responses API.

``replay run cases/reserve.yaml --agent examples.frameworks.openai_agents_responses:agent
--tools examples.frameworks:make_tools ...``
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any

from agents import (
    Agent,
    Model,
    OpenAIChatCompletionsModel,
    OpenAIResponsesModel,
    Runner,
    function_tool,
)
from openai import AsyncOpenAI

if TYPE_CHECKING:
    from replay import Environment

INSTRUCTIONS = "You keep a small shop's inventory. Check the stock before you reserve anything."
MODEL = "stub-inventory-1"


def build(
    functions: Sequence[Callable[..., Any]], *, model: Model, instructions: str = INSTRUCTIONS
) -> Agent[Any]:
    """The agent as the team wrote it: its own tools, decorated the framework's way."""
    return Agent(
        name="inventory",
        instructions=instructions,
        tools=[function_tool(f) for f in functions],
        model=model,
    )


def responses_model(client: AsyncOpenAI, model: str = MODEL) -> Model:
    """The Responses API model (openai-agents' default)."""
    return OpenAIResponsesModel(model, client)


def chat_model(client: AsyncOpenAI, model: str = MODEL) -> Model:
    """The chat-completions model."""
    return OpenAIChatCompletionsModel(model, client)


async def run(agent: Agent[Any], instruction: str, *, stream: bool = False) -> str:
    """Run to the final answer, streamed or not."""
    if stream:
        result = Runner.run_streamed(agent, instruction)
        async for _ in result.stream_events():
            pass
        return str(result.final_output)
    return str((await Runner.run(agent, instruction)).final_output)


async def run_with(
    make_model: Callable[[AsyncOpenAI, str], Model], instruction: str, env: Environment
) -> str:
    """The same agent, given the trial's tools, model endpoint and settings."""
    async with AsyncOpenAI(base_url=env.llm_base_url, api_key=env.api_key) as client:
        built = build(
            env.functions,
            model=make_model(client, env.model or MODEL),
            instructions=env.settings.get("instructions", INSTRUCTIONS),
        )
        return await run(built, instruction, stream=bool(env.settings.get("stream")))


async def agent(instruction: str, env: Environment) -> str:
    """The entry point ``replay run --agent`` calls."""
    return await run_with(responses_model, instruction, env)
