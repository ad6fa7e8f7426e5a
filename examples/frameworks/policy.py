"""The stub model's script for the framework examples: two parallel turns, then the answer."""

from __future__ import annotations

from replay.stub_llm import Reply, ScriptedPolicy, ToolCall

INSTRUCTION = "Reserve 2 mugs and 1 plate for me."
ANSWER = "I reserved 2 mugs and 1 plate for you."


def reserve_policy() -> ScriptedPolicy:
    """Check both items at once, reserve both at once, then answer."""
    return ScriptedPolicy(
        [
            Reply(
                tool_calls=(
                    ToolCall("check_stock", {"sku": "mug"}),
                    ToolCall("check_stock", {"sku": "plate"}),
                )
            ),
            Reply(
                tool_calls=(
                    ToolCall("reserve", {"sku": "mug", "qty": 2}),
                    ToolCall("reserve", {"sku": "plate", "qty": 1}),
                )
            ),
        ],
        final=ANSWER,
    )
