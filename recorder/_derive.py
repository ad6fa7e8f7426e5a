"""What a footer says, derived from the events: pins, usage, timings, final answer.

Derived at close for the footer, and again by the reader for a cassette cut
short before its footer was written.
"""

from __future__ import annotations

from collections.abc import Sequence

from ._delta import net_delta
from ._llm import LlmCall, llm_call, short_hash
from ._schema import (
    Event,
    Footer,
    HttpEvent,
    Pins,
    Timings,
    ToolEvent,
    Usage,
    UserEvent,
    WarningEvent,
)


def llm_calls(events: Sequence[Event]) -> list[tuple[HttpEvent, LlmCall]]:
    """Return the LLM calls among the events, in order.

    Only the first call's request is parsed in full (it sets the pins); the
    others resend the conversation, and only their model and reply matter here.
    """
    out: list[tuple[HttpEvent, LlmCall]] = []
    for event in events:
        if isinstance(event, HttpEvent):
            call = llm_call(event, request=not out)
            if call is not None:
                out.append((event, call))
    return out


def observed_pins(base: Pins, calls: Sequence[LlmCall]) -> Pins:
    """Return ``base`` completed with what the LLM requests show; ``base`` wins."""
    if not calls:
        return base
    first = calls[0]
    models = list(dict.fromkeys(c.model for c in calls if c.model))
    tools = first.tools
    seen = Pins(
        model="+".join(models) or None,
        sampling=first.sampling,
        system_prompt_hash=short_hash(first.system) if first.system is not None else None,
        tool_schema_hash=short_hash(tools) if tools else None,
    )
    given = base.model_dump(exclude_defaults=True)
    return seen.model_copy(update={**seen.model_dump(exclude_defaults=True), **given})


def unwrapped_tools(events: Sequence[Event]) -> str | None:
    """The warning for a recording whose LLM asked for tool calls none of which was recorded.

    Only calls a later LLM call followed count (the agent ran something and went on): a
    call that ended the run is often structured output (pydantic-ai's ``final_result``),
    which no tool answers. None when no tool event is missing (or one was recorded).
    """
    if any(isinstance(e, ToolEvent) for e in events):
        return None
    asked = sum(len(call.reply_tool_calls) for _, call in llm_calls(events)[:-1])
    if not asked:
        return None
    return (
        f"the LLM asked for {asked} tool call{'s' * (asked != 1)} and no tool call was "
        "recorded: wrap the agent's tools with recorder.tool (or serve them over MCP) "
        "so that the cassette holds their calls and what they changed"
    )


def footer_for(
    events: Sequence[Event],
    *,
    base_pins: Pins,
    status: str,
    total: float,
    final_answer: str | None,
    world_attached: bool,
    ignored: dict[str, int] | None = None,
) -> Footer:
    """Build the footer that closes a cassette holding ``events``."""
    calls = llm_calls(events)
    tools = [e for e in events if isinstance(e, ToolEvent)]
    if final_answer is None and calls and not calls[-1][1].reply_tool_calls:
        final_answer = calls[-1][1].reply_text
    usage = Usage(
        llm_calls=len(calls),
        http_calls=sum(isinstance(e, HttpEvent) for e in events),
        tool_calls=sum(not e.name.startswith("mcp:") for e in tools),  # (a server's protocol:
        # ``mcp:SERVER:initialize``, ``tools/list``... are the manifest's, not tool calls)
        user_turns=sum(isinstance(e, UserEvent) for e in events),
        input_tokens=sum(c.input_tokens for _, c in calls),
        output_tokens=sum(c.output_tokens for _, c in calls),
        llm_calls_without_usage=sum(not c.usage_known for _, c in calls),
        ignored=dict(ignored or {}),
    )
    timings = Timings(
        total=total,
        llm=sum(e.duration for e, _ in calls),
        tools=sum(e.duration for e in tools),
    )
    deltas = [e.delta for e in events if isinstance(e, (ToolEvent, WarningEvent)) and e.delta]
    state_diff = net_delta(deltas) if world_attached else None
    return Footer(
        status="error" if status == "error" else "ok",
        final_answer=final_answer,
        usage=usage,
        timings=timings,
        state_diff=state_diff,
        pins=observed_pins(base_pins, [c for _, c in calls]),
    )
