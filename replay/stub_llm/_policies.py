"""The stub LLM's data model and its policies (what the model answers).

Policies are deterministic functions of the request, so any number of
conversations may share one server.
"""

from __future__ import annotations

import json
import os
import re
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any, Literal, Protocol

DEFAULT_FINAL = "Done."

# --------------------------------------------------------------------------- data model


@dataclass(frozen=True, slots=True)
class ToolCall:
    """A tool call the stub model makes.

    Attributes:
        name: Name of the tool to call.
        arguments: JSON-serialisable arguments for the tool.
    """

    name: str
    arguments: dict[str, Any]


@dataclass(frozen=True, slots=True)
class Reply:
    """One assistant turn: some text, some tool calls, or both.

    Attributes:
        content: Text of the reply, or None for a tool-call-only reply.
        tool_calls: Tool calls made by the reply, in order.
    """

    content: str | None = None
    tool_calls: tuple[ToolCall, ...] = ()
    delay: float = 0.0
    """Seconds the server waits before answering (to test clients' timeouts)."""


@dataclass(frozen=True, slots=True)
class Fail:
    """An HTTP error answer instead of a reply (a 429, a 500...).

    Attributes:
        status: HTTP status code to answer.
        message: Error message in the body (``{"error": {"message": ...}}``).
        delay: Seconds the server waits before answering.
    """

    status: int = 500
    message: str = "stub failure"
    delay: float = 0.0


@dataclass(frozen=True, slots=True)
class ChatRequest:
    """A chat request normalized to the same shape for every API.

    Attributes:
        model: Model name sent by the client.
        messages: OpenAI-style messages. Every message has the keys ``role`` (``"system"``,
            ``"user"``, ``"assistant"`` or ``"tool"``), ``content`` (always a string),
            ``tool_calls`` (a list of ``{"id", "type": "function", "function": {"name",
            "arguments"}}`` dicts with ``arguments`` a JSON string; empty unless the message
            is an assistant's) and ``tool_call_id`` (a string for tool messages, else None).
            An Anthropic ``system`` prompt becomes a leading system message, and each
            ``tool_result`` block becomes its own tool message. A Responses request's
            ``instructions`` become a leading system message, its ``function_call`` items
            the ``tool_calls`` of one assistant turn (joined to the assistant message just
            before them) and each ``function_call_output`` item a tool message.
        tools: Names of the (function) tools the client offered.
        api: Which endpoint the request came in on: ``"openai"`` (chat completions),
            ``"anthropic"`` (messages) or ``"responses"`` (the OpenAI Responses API).
    """

    model: str
    messages: list[dict[str, Any]]
    tools: list[str]
    api: Literal["openai", "anthropic", "responses"]


class Policy(Protocol):
    """Decides the stub model's reply to a request; shared by all endpoints."""

    def __call__(self, request: ChatRequest) -> Reply | Fail:
        """Return the reply to ``request`` (or an HTTP error to answer).

        Args:
            request: The normalized request.

        Returns:
            The assistant's reply.
        """
        ...


def _assistant_turns(messages: Sequence[dict[str, Any]]) -> int:
    return sum(1 for message in messages if message.get("role") == "assistant")


class ScriptedPolicy:
    """Plays a fixed script of replies, one per assistant turn.

    The turn used is the number of assistant messages already in the request's
    conversation, so the policy is stateless: any number of conversations may run
    concurrently against one server, and retrying a request gives the same reply.
    Once the script is exhausted every reply is the text ``final``.

    Attributes:
        turns: The scripted replies, in order.
        final: Text answered once the script is exhausted.
    """

    def __init__(self, turns: Sequence[Reply], final: str = DEFAULT_FINAL) -> None:
        """Create a scripted policy.

        Args:
            turns: The scripted replies, in order.
            final: Text answered once the script is exhausted.

        Raises:
            TypeError: If a turn is not a `Reply`.
        """
        for turn in turns:
            if not isinstance(turn, Reply):
                raise TypeError(f"turns must be Reply objects, got {type(turn).__name__}")
        self.turns: tuple[Reply, ...] = tuple(turns)
        self.final = final

    def __repr__(self) -> str:
        return f"ScriptedPolicy(turns={self.turns!r}, final={self.final!r})"

    def __call__(self, request: ChatRequest) -> Reply:
        """Return the scripted reply for the conversation's current turn.

        Args:
            request: The normalized request.

        Returns:
            The reply for this turn, or ``final`` once the script is exhausted.
        """
        turn = _assistant_turns(request.messages)
        if turn < len(self.turns):
            return self.turns[turn]
        return Reply(content=self.final)

    @classmethod
    def from_json(cls, path: str | os.PathLike[str]) -> ScriptedPolicy:
        """Load a script from a JSON file.

        The file holds ``{"turns": [...], "final": "..."}`` where each turn is
        ``{"content": "..."}``, ``{"tool_calls": [{"name": ..., "arguments": {...}}]}`` or
        both; ``final`` is optional.

        Args:
            path: Path of the JSON file.

        Returns:
            The scripted policy.

        Raises:
            ValueError: If the file is not a valid script.
        """
        with open(path, encoding="utf-8") as handle:
            try:
                data = json.load(handle)
            except json.JSONDecodeError as exc:
                raise ValueError(f"{os.fspath(path)}: not valid JSON: {exc}") from exc
        where = os.fspath(path)
        if not isinstance(data, dict) or not isinstance(data.get("turns"), list):
            raise ValueError(f"{where}: expected an object with a 'turns' list")
        final = data.get("final", DEFAULT_FINAL)
        if not isinstance(final, str):
            raise ValueError(f"{where}: 'final' must be a string")
        turns = [
            _reply_from_json(turn, f"{where}: turns[{i}]") for i, turn in enumerate(data["turns"])
        ]
        return cls(turns, final=final)


def _reply_from_json(data: Any, where: str) -> Reply:
    if not isinstance(data, dict):
        raise ValueError(f"{where}: expected an object")
    unknown = set(data) - {"content", "tool_calls"}
    if unknown:
        raise ValueError(f"{where}: unknown keys {sorted(unknown)}")
    content = data.get("content")
    if content is not None and not isinstance(content, str):
        raise ValueError(f"{where}: 'content' must be a string")
    raw_calls = data.get("tool_calls", [])
    if not isinstance(raw_calls, list):
        raise ValueError(f"{where}: 'tool_calls' must be a list")
    calls: list[ToolCall] = []
    for j, call in enumerate(raw_calls):
        if (
            not isinstance(call, dict)
            or not isinstance(call.get("name"), str)
            or not isinstance(call.get("arguments", {}), dict)
        ):
            raise ValueError(
                f"{where}: tool_calls[{j}] must be {{'name': str, 'arguments': object}}"
            )
        calls.append(ToolCall(name=call["name"], arguments=dict(call.get("arguments", {}))))
    if content is None and not calls:
        raise ValueError(f"{where}: a turn needs 'content' or 'tool_calls'")
    return Reply(content=content, tool_calls=tuple(calls))


class EchoPolicy:
    """Answers ``"echo: <last user message>"``."""

    def __repr__(self) -> str:
        return "EchoPolicy()"

    def __call__(self, request: ChatRequest) -> Reply:
        """Echo the last user message.

        Args:
            request: The normalized request.

        Returns:
            A text reply echoing the last user message (empty if there is none).
        """
        last = next(
            (m["content"] for m in reversed(request.messages) if m["role"] == "user"),
            "",
        )
        return Reply(content=f"echo: {last}")


_JudgeStyle = Literal["json", "fenced", "prose", "refusal"]


@dataclass(frozen=True)
class JudgePolicy:
    """Plays an LLM judge: answers ``{"verdict": ..., "reason": ...}`` decided by rules.

    The first rule whose pattern (a case-insensitive regular expression) occurs
    in the conversation's last user message decides the verdict; otherwise
    ``default``. ``style`` shapes the answer the way real judges misbehave:
    ``json`` (the contract), ``fenced`` (JSON inside a Markdown code fence),
    ``prose`` (an opinion with no JSON) or ``refusal`` (declines to judge).

    Example:
        >>> JudgePolicy(rules=(("apolog", "pass"),), default="fail")
    """

    rules: Sequence[tuple[str, str]] = ()
    default: str = "pass"
    style: _JudgeStyle = "json"
    delay: float = 0.0
    _compiled: tuple[tuple[re.Pattern[str], str], ...] = field(init=False, repr=False)

    def __post_init__(self) -> None:
        compiled = tuple((re.compile(p, re.IGNORECASE), v) for p, v in self.rules)
        object.__setattr__(self, "_compiled", compiled)

    def __call__(self, request: ChatRequest) -> Reply:
        """Judge the last user message."""
        text = next((m["content"] for m in reversed(request.messages) if m["role"] == "user"), "")
        verdict, reason = self.default, "no rule matched"
        for pattern, rule_verdict in self._compiled:
            if pattern.search(text):
                verdict, reason = rule_verdict, f"matched {pattern.pattern!r}"
                break
        answer = json.dumps({"verdict": verdict, "reason": reason})
        content = {
            "json": answer,
            "fenced": f"```json\n{answer}\n```",
            "prose": f"Looking at the transcript, I would say it is a {verdict}, mostly.",
            "refusal": "I'm sorry, but I can't help with evaluating this conversation.",
        }[self.style]
        return Reply(content=content, delay=self.delay)
