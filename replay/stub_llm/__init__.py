"""A stub LLM server speaking the OpenAI and Anthropic HTTP APIs, for testing agents offline.

Chat completions, Responses and Anthropic messages, streamed or not; replies
come from a pluggable, deterministic policy. Only the standard library is
used, so ``import replay.stub_llm`` loads nothing else of replay's.
"""

from ._policies import (
    ChatRequest,
    EchoPolicy,
    Fail,
    JudgePolicy,
    Policy,
    Reply,
    ScriptedPolicy,
    ToolCall,
)
from ._server import StubLLM, serve

__all__ = [
    "ChatRequest",
    "EchoPolicy",
    "Fail",
    "JudgePolicy",
    "Policy",
    "Reply",
    "ScriptedPolicy",
    "StubLLM",
    "ToolCall",
    "serve",
]
