"""The stub LLM's OpenAI Responses API (``POST /v1/responses``), streamed or not.

The stub keeps no conversation state: a request must carry the whole conversation in
``input`` (what clients send with ``store=False``). ``previous_response_id`` and
``conversation`` are answered 400 with a message saying so.
"""

from __future__ import annotations

import itertools
from collections.abc import Callable, Iterator
from typing import Any

from ._policies import ChatRequest
from ._wire import (
    Answer,
    BadRequest,
    Endpoint,
    arguments_json,
    completion_tokens,
    message,
    pieces,
    prompt_tokens,
    reply_text,
    require_model,
    sse,
    text_of,
    tool_call,
    words,
)

# Input message roles -> `ChatRequest` roles; developer messages are system prompts.
_ROLES = {"user": "user", "assistant": "assistant", "system": "system", "developer": "system"}
_STATEFUL = ("previous_response_id", "conversation")

# --------------------------------------------------------------------------- normalization


def _message_item(item: dict[str, Any], messages: list[dict[str, Any]], where: str) -> None:
    role = item.get("role")
    if role not in _ROLES:
        raise BadRequest(f"{where}: 'role' must be one of {sorted(_ROLES)}, got {role!r}")
    messages.append(message(_ROLES[role], text_of(item.get("content"))))


def _require_str(item: dict[str, Any], key: str, where: str) -> str:
    value = item.get(key)
    if not isinstance(value, str):
        raise BadRequest(f"{where}: {item.get('type')} item needs a string {key!r}")
    return value


def _function_call_item(item: dict[str, Any], messages: list[dict[str, Any]], where: str) -> None:
    arguments = item.get("arguments", "")
    if not isinstance(arguments, str):
        raise BadRequest(f"{where}: function_call 'arguments' must be a JSON string")
    call = tool_call(
        _require_str(item, "call_id", where), _require_str(item, "name", where), arguments
    )
    # A response's message and function calls are one assistant turn, as one chat
    # completions message with tool_calls is, so scripted policies count turns alike.
    if messages and messages[-1]["role"] == "assistant":
        messages[-1]["tool_calls"].append(call)
    else:
        messages.append(message("assistant", "", [call]))


def _function_call_output_item(
    item: dict[str, Any], messages: list[dict[str, Any]], where: str
) -> None:
    call_id = _require_str(item, "call_id", where)
    messages.append(message("tool", text_of(item.get("output")), tool_call_id=call_id))


def _reasoning_item(item: dict[str, Any], messages: list[dict[str, Any]], where: str) -> None:
    """Reasoning is the model's own scratchpad; a policy never sees it."""


_ItemReader = Callable[[dict[str, Any], list[dict[str, Any]], str], None]
_ITEM_READERS: dict[str, _ItemReader] = {
    "message": _message_item,
    "function_call": _function_call_item,
    "function_call_output": _function_call_output_item,
    "reasoning": _reasoning_item,
}


def _input_messages(raw: Any) -> list[dict[str, Any]]:
    if isinstance(raw, str):
        return [message("user", raw)]
    if not isinstance(raw, list):
        raise BadRequest("'input' must be a string or a list of input items")
    messages: list[dict[str, Any]] = []
    for index, item in enumerate(raw):
        where = f"input[{index}]"
        if not isinstance(item, dict):
            raise BadRequest(f"{where} must be an object")
        kind = item.get("type", "message")
        reader = _ITEM_READERS.get(kind)
        if reader is None:
            raise BadRequest(
                f"{where}: unsupported item type {kind!r}; the stub LLM reads "
                f"{', '.join(_ITEM_READERS)} items"
            )
        reader(item, messages, where)
    return messages


def function_tools(body: dict[str, Any]) -> list[dict[str, Any]]:
    """The request's function tools; other tool types are ignored.

    Raises:
        BadRequest: If ``tools`` is not a list of objects or a function tool has no name.
    """
    tools = body.get("tools")
    if tools is None:
        return []
    if not isinstance(tools, list):
        raise BadRequest("'tools' must be a list")
    found: list[dict[str, Any]] = []
    for index, tool in enumerate(tools):
        if not isinstance(tool, dict):
            raise BadRequest(f"tools[{index}] must be an object")
        if tool.get("type") != "function":
            continue
        if not isinstance(tool.get("name"), str):
            raise BadRequest(f"tools[{index}]: a function tool needs a string 'name'")
        found.append(tool)
    return found


def normalize(body: dict[str, Any]) -> ChatRequest:
    """Read a Responses request body into the same `ChatRequest` chat completions give.

    ``instructions`` becomes a leading system message; ``input`` is a user text or a list
    of items: messages (``developer`` becomes ``system``), ``function_call`` items (those
    following an assistant message, or each other, join that assistant turn) and
    ``function_call_output`` items (tool messages). Reasoning items are dropped.

    Raises:
        BadRequest: If the body is not a valid Responses request, or relies on state
            kept by the server (``previous_response_id``, ``conversation``).
    """
    for key in _STATEFUL:
        if body.get(key) is not None:
            raise BadRequest(
                f"{key!r} is not supported: the stub LLM keeps no conversation state, "
                "so send the full conversation in 'input' (as with store=False)"
            )
    model = require_model(body)
    messages: list[dict[str, Any]] = []
    instructions = body.get("instructions")
    if instructions is not None and not isinstance(instructions, str):
        raise BadRequest("'instructions' must be a string")
    if instructions:
        messages.append(message("system", instructions))
    if "input" not in body:
        raise BadRequest("'input' is required: the stub LLM needs the full conversation")
    messages.extend(_input_messages(body["input"]))
    tools = [str(tool["name"]) for tool in function_tools(body)]
    return ChatRequest(model=model, messages=messages, tools=tools, api="responses")


# --------------------------------------------------------------------------- rendering


def _echo(body: dict[str, Any], key: str, kinds: type | tuple[type, ...], default: Any) -> Any:
    value = body.get(key)
    return value if isinstance(value, kinds) and not isinstance(value, bool) else default


def _settings(body: dict[str, Any]) -> dict[str, Any]:
    """The request settings a response object repeats back (defaults when absent or odd)."""
    tool_choice = body.get("tool_choice")
    if not (tool_choice in ("none", "auto", "required") or isinstance(tool_choice, dict)):
        tool_choice = "auto"
    truncation = body.get("truncation")
    parallel = body.get("parallel_tool_calls")
    return {
        "instructions": _echo(body, "instructions", str, None),
        "max_output_tokens": _echo(body, "max_output_tokens", int, None),
        "max_tool_calls": _echo(body, "max_tool_calls", int, None),
        "metadata": _echo(body, "metadata", dict, {}),
        "parallel_tool_calls": parallel if isinstance(parallel, bool) else True,
        "temperature": _echo(body, "temperature", (int, float), 1.0),
        "text": _echo(body, "text", dict, {"format": {"type": "text"}}),
        "tool_choice": tool_choice,
        "tools": [
            {
                "type": "function",
                "name": tool["name"],
                "description": tool.get("description"),
                "parameters": tool.get("parameters"),
                "strict": tool.get("strict"),
            }
            for tool in function_tools(body)
        ],
        "top_p": _echo(body, "top_p", (int, float), 1.0),
        "truncation": truncation if truncation in ("auto", "disabled") else "disabled",
        "user": _echo(body, "user", str, None),
    }


def _usage(answer: Answer) -> dict[str, Any]:
    prompt, completion = prompt_tokens(answer.request), completion_tokens(answer.reply)
    return {
        "input_tokens": prompt,
        "input_tokens_details": {"cached_tokens": 0, "cache_write_tokens": 0},
        "output_tokens": completion,
        "output_tokens_details": {"reasoning_tokens": 0},
        "total_tokens": prompt + completion,
    }


def _response(
    answer: Answer,
    body: dict[str, Any],
    output: list[dict[str, Any]],
    usage: dict[str, Any] | None,
) -> dict[str, Any]:
    return {
        "id": answer.response_id,
        "object": "response",
        "created_at": 0,
        "status": "completed" if usage is not None else "in_progress",
        "background": False,
        "error": None,
        "incomplete_details": None,
        "model": answer.request.model,
        "output": output,
        "previous_response_id": None,
        "reasoning": {"effort": None, "summary": None},
        "usage": usage,
        **_settings(body),
    }


def _text_part(text: str) -> dict[str, Any]:
    return {"type": "output_text", "text": text, "annotations": [], "logprobs": []}


def _output(answer: Answer) -> list[dict[str, Any]]:
    """The output items: a message with the reply's text, then one item per tool call.

    A message id pairs with its response id (``resp_stub_3`` -> ``msg_stub_3``) and a
    function call's item id with its call id (``call_stub_7`` -> ``fc_stub_7``).
    """
    items: list[dict[str, Any]] = []
    text = reply_text(answer.reply)
    if text is not None:
        items.append(
            {
                "id": "msg_" + answer.response_id.removeprefix("resp_"),
                "type": "message",
                "status": "completed",
                "role": "assistant",
                "content": [_text_part(text)],
            }
        )
    for call_id, call in zip(answer.tool_call_ids, answer.reply.tool_calls, strict=True):
        items.append(
            {
                "id": "fc_" + call_id.removeprefix("call_"),
                "type": "function_call",
                "status": "completed",
                "call_id": call_id,
                "name": call.name,
                "arguments": arguments_json(call),
            }
        )
    return items


def response(answer: Answer, body: dict[str, Any]) -> dict[str, Any]:
    """The ``response`` object answering a non-streamed request."""
    return _response(answer, body, _output(answer), _usage(answer))


class _Events:
    """Numbers the events of one stream (every event has a ``sequence_number``)."""

    def __init__(self) -> None:
        self._numbers = itertools.count()

    def __call__(self, kind: str, **fields: Any) -> bytes:
        return sse({"type": kind, "sequence_number": next(self._numbers), **fields}, kind)


def _stream_message(event: _Events, index: int, item: dict[str, Any]) -> Iterator[bytes]:
    text = item["content"][0]["text"]
    where = {"item_id": item["id"], "output_index": index, "content_index": 0}
    yield event(
        "response.output_item.added",
        output_index=index,
        item={**item, "status": "in_progress", "content": []},
    )
    yield event("response.content_part.added", **where, part=_text_part(""))
    for word in words(text):
        yield event("response.output_text.delta", **where, delta=word, logprobs=[])
    yield event("response.output_text.done", **where, text=text, logprobs=[])
    yield event("response.content_part.done", **where, part=_text_part(text))
    yield event("response.output_item.done", output_index=index, item=item)


def _stream_function_call(event: _Events, index: int, item: dict[str, Any]) -> Iterator[bytes]:
    where = {"item_id": item["id"], "output_index": index}
    yield event(
        "response.output_item.added",
        output_index=index,
        item={**item, "status": "in_progress", "arguments": ""},
    )
    for piece in pieces(item["arguments"]):
        yield event("response.function_call_arguments.delta", **where, delta=piece)
    yield event("response.function_call_arguments.done", **where, arguments=item["arguments"])
    yield event("response.output_item.done", output_index=index, item=item)


def stream(answer: Answer, body: dict[str, Any]) -> Iterator[bytes]:
    """The events answering a streamed request, from ``response.created`` to ``completed``."""
    event = _Events()
    started = _response(answer, body, [], None)
    yield event("response.created", response=started)
    yield event("response.in_progress", response=started)
    output = _output(answer)
    for index, item in enumerate(output):
        if item["type"] == "message":
            yield from _stream_message(event, index, item)
        else:
            yield from _stream_function_call(event, index, item)
    yield event("response.completed", response=_response(answer, body, output, _usage(answer)))


ENDPOINT = Endpoint(
    normalize=normalize,
    render=response,
    stream=stream,
    response_id="resp_stub_{}",
    tool_call_id="call_stub_{}",
)
