"""The limits a trial can hit, as stored and shown: a plain enum, read without the modes."""

from __future__ import annotations

import enum


class Guard(str, enum.Enum):
    """A guard flag: which limit of a trial fired, in the word stored and shown."""

    TIMEOUT = "timeout"
    """The agent ran past its deadline (``--trial-timeout``)."""
    MEMORY = "memory"
    """An agent in a process of its own used more memory than allowed (``--trial-memory``)."""
    PIDS = "pids"
    """A walled agent ran as many processes and threads as allowed (``--trial-pids``)."""
    LLM_TOKENS = "llm_tokens"
    """The trial's LLM calls used more tokens than allowed (``--max-llm-tokens``)."""
    TOOL_RESULT_CHARS = "tool_result_chars"
    """A tool result was longer than allowed (``--max-tool-result-chars``)."""
