"""Reading LLM calls out of recorded HTTP exchanges.

Three APIs: OpenAI chat completions, the OpenAI Responses API and Anthropic
messages, streamed or not.

Used for automatic pins, the final answer, token usage and the transcript.
Parsing is best effort: an exchange that does not look like an LLM call
yields ``None`` and is shown as plain HTTP.
"""

from __future__ import annotations

import functools
import hashlib
import json
import re
from dataclasses import dataclass, field, replace
from typing import Any, Literal
from urllib.parse import urlsplit

from ._bounds import decode_body
from ._bounds import load_json as _loads
from ._schema import HttpEvent, HttpResponse

SAMPLING_KEYS = (
    "temperature",
    "top_p",
    "top_k",
    "max_tokens",
    "max_completion_tokens",
    "max_output_tokens",
    "seed",
    "n",
    "stop",
    "stop_sequences",
    "presence_penalty",
    "frequency_penalty",
    "tool_choice",
    "response_format",
    "reasoning_effort",
    "reasoning",
)

Api = Literal["openai", "responses", "anthropic"]
"""Which LLM API: chat completions ('openai'), Responses ('responses'), Anthropic messages."""


@dataclass(frozen=True, slots=True)
class LlmToolCall:
    """A tool call the model asked for."""

    name: str
    arguments: Any
    """Parsed JSON arguments, or the raw string when they do not parse."""
    id: str | None = None


@dataclass(frozen=True, slots=True)
class LlmCall:
    """One LLM request and its reply, API differences smoothed over."""

    api: Api
    model: str | None
    system: str | None
    messages: list[dict[str, Any]]
    tools: list[Any]
    sampling: dict[str, Any]
    stream: bool
    reply_text: str | None = None
    reply_tool_calls: list[LlmToolCall] = field(default_factory=list)
    input_tokens: int = 0
    output_tokens: int = 0
    usage_known: bool = False
    """Whether the reply reported its token usage (a stream without usage does not)."""
    base_url: str | None = None
    """The base URL the SDK was given (the request URL minus the API's path), if it shows."""


def short_hash(value: Any) -> str:
    """Return the first 16 hex digits of the sha256 of a value's canonical JSON."""
    text = value if isinstance(value, str) else json.dumps(value, sort_keys=True, default=str)
    return hashlib.sha256(text.encode()).hexdigest()[:16]


_API_PATHS: tuple[tuple[str, Api], ...] = (
    ("/chat/completions", "openai"),
    ("/responses", "responses"),
    ("/messages", "anthropic"),
)


_REMEMBERED_URL = 2048
"""URLs up to this long are remembered (``api_of``, ``_base_url``): 256 of them at most, so
a file's long URLs cannot make the cache hold more than half a megabyte."""


def api_of(url: str) -> Api | None:
    """Return which LLM API a request URL belongs to, if any.

    Remembered per URL: an agent asks one or two, for every call.
    """
    return _api_of(url) if len(url) <= _REMEMBERED_URL else _api_of.__wrapped__(url)


@functools.lru_cache(maxsize=256)
def _api_of(url: str) -> Api | None:
    try:
        path = urlsplit(url).path.rstrip("/")
    except ValueError:
        return None
    return next((api for suffix, api in _API_PATHS if path.endswith(suffix)), None)


_AFTER_BASE_URL: dict[Api, str] = {
    "openai": "/chat/completions",
    "responses": "/responses",
    "anthropic": "/v1/messages",  # the Anthropic SDK's base URL stops before /v1
}


def _base_url(api: Api, url: str) -> str | None:
    """The SDK base URL a request was made against: its URL minus the API's path."""
    if len(url) <= _REMEMBERED_URL:
        return _remembered_base_url(api, url)
    return _remembered_base_url.__wrapped__(api, url)


@functools.lru_cache(maxsize=256)
def _remembered_base_url(api: Api, url: str) -> str | None:
    try:
        url = urlsplit(url)._replace(query="", fragment="").geturl().rstrip("/")
    except ValueError:
        return None
    suffix = _AFTER_BASE_URL[api]
    return url[: -len(suffix)] if url.endswith(suffix) else None


def response_body(response: HttpResponse) -> bytes:
    """Return the response body with gzip/deflate content-encoding undone."""
    body = b"".join(response.chunks)
    encoding = next((v for k, v in response.headers if k == "content-encoding"), "").lower()
    decoded = decode_body(body, encoding)  # bounded (see recorder._bounds)
    return body if decoded is None else decoded


def llm_call(event: HttpEvent, *, request: bool = True) -> LlmCall | None:
    """Return the LLM view of an HTTP event, or None if it is not an LLM call.

    Never raises: a body that does not have the expected shape yields None
    (not an LLM call) or a call without its reply. With ``request=False`` the
    request body (the whole conversation so far) is not parsed: only its
    model is read, and messages, tools and sampling are left empty.
    """
    api = api_of(event.request.url)
    if api is None or event.request.method != "POST":
        return None
    # The model, found once: it is all request=False reads, and ".../responses" and
    # ".../messages" are common REST paths, LLM calls only when they name a model.
    found = _MODEL.search(event.request.body) if api != "openai" or not request else None
    if api != "openai" and found is None:
        return None
    try:
        if request:
            call = _parse_request(api, _loads(event.request.body or b"{}"))
        else:
            model = found.group(1).decode("utf-8", "replace") if found else None
            call = LlmCall(
                api, model, None, [], [], {}, stream=b'"stream":true' in event.request.body
            )
    except _SHAPE_ERRORS:
        return None
    base_url = _base_url(api, event.request.url)
    if event.response is None or event.response.status >= 400:
        # No reply: nothing spent, nothing unknown.
        return replace(call, base_url=base_url, usage_known=True)
    body = response_body(event.response)
    try:
        if body.lstrip()[:1] == b"{":
            reply = _parse_reply(api, _loads(body))
        else:
            reply = _parse_stream(api, _sse_payloads(body))
        text, tool_calls, tokens_in, tokens_out = reply
        return replace(  # (one replace: each copies every field)
            call,
            base_url=base_url,
            reply_text=text if isinstance(text, str) or text is None else str(text),
            reply_tool_calls=tool_calls,
            input_tokens=_count(tokens_in),
            output_tokens=_count(tokens_out),
            usage_known=tokens_in is not None or tokens_out is not None,
        )
    except _SHAPE_ERRORS:
        return replace(call, base_url=base_url)


_SHAPE_ERRORS = (ValueError, KeyError, TypeError, IndexError, AttributeError)
# Inside a JSON string a quote is always escaped, so this only matches a "model" key.
_MODEL = re.compile(rb'"model"\s*:\s*"((?:[^"\\]|\\.)*)"')


def _count(value: Any) -> int:
    if isinstance(value, bool) or not isinstance(value, (int, float)) or value != value:
        return 0
    return int(value) if abs(value) < 2**63 else 0  # never Infinity or a uint64 from a file


def _text(content: Any) -> str:
    if content is None:
        return ""
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "".join(
            part.get("text", "") for part in content if isinstance(part, dict) and "text" in part
        )
    return str(content)


def _parse_request(api: Api, req: Any) -> LlmCall:
    if not isinstance(req, dict):
        raise TypeError("request body is not an object")
    if api == "responses":
        return _parse_responses_request(req)
    messages = req.get("messages") or []
    if not isinstance(messages, list):
        raise TypeError("messages is not a list")
    messages = [m if isinstance(m, dict) else {"role": "?", "content": m} for m in messages]
    if api == "openai":
        sys_msgs = [m for m in messages if m.get("role") in ("system", "developer")]
        system = _text(sys_msgs[0].get("content")) if sys_msgs else None
    else:
        system = _text(req.get("system")) if req.get("system") is not None else None
    model = req.get("model")
    tools = req.get("tools") or []
    return LlmCall(
        api=api,
        model=model if isinstance(model, str) else None if model is None else str(model),
        system=system,
        messages=messages,
        tools=list(tools) if isinstance(tools, list) else [tools],
        sampling={k: req[k] for k in SAMPLING_KEYS if k in req},
        stream=bool(req.get("stream")),
    )


def _parse_responses_request(req: dict[str, Any]) -> LlmCall:
    """A Responses API request: ``instructions`` and ``input`` (a string or items)."""
    items = req.get("input")
    if items is None:
        items = []
    elif isinstance(items, str):
        items = [{"role": "user", "content": items}]
    elif not isinstance(items, list):
        raise TypeError("input is not a list")
    messages = [m if isinstance(m, dict) else {"role": "?", "content": m} for m in items]
    system = req.get("instructions")
    if system is None:
        first = next((m for m in messages if m.get("role") in ("system", "developer")), None)
        system = first.get("content") if first is not None else None
    model = req.get("model")
    tools = req.get("tools") or []
    return LlmCall(
        api="responses",
        model=model if isinstance(model, str) else None if model is None else str(model),
        system=_text(system) if system is not None else None,
        messages=messages,
        tools=list(tools) if isinstance(tools, list) else [tools],
        sampling={k: req[k] for k in SAMPLING_KEYS if k in req},
        stream=bool(req.get("stream")),
    )


_Reply = tuple[str | None, list[LlmToolCall], Any, Any]
"""Text, tool calls, input and output tokens (None where the reply did not say)."""


def _args(raw: Any) -> Any:
    if not isinstance(raw, str):
        return raw
    try:
        return _loads(raw) if raw else {}
    except ValueError:
        return raw


def _parse_reply(api: str, body: dict[str, Any]) -> _Reply:
    usage = body.get("usage") or {}
    if api == "responses":
        return _responses_reply(body)
    if api == "openai":
        msg = body["choices"][0]["message"]
        calls = [
            LlmToolCall(
                tc["function"]["name"], _args(tc["function"].get("arguments")), tc.get("id")
            )
            for tc in msg.get("tool_calls") or []
        ]
        return (
            msg.get("content"),
            calls,
            usage.get("prompt_tokens"),
            usage.get("completion_tokens"),
        )
    blocks = body.get("content") or []
    text = "".join(b.get("text", "") for b in blocks if b.get("type") == "text") or None
    calls = [
        LlmToolCall(b["name"], b.get("input"), b.get("id"))
        for b in blocks
        if b.get("type") == "tool_use"
    ]
    return text, calls, usage.get("input_tokens"), usage.get("output_tokens")


def _responses_reply(response: dict[str, Any]) -> _Reply:
    """A Responses API ``response`` object: its output items and usage."""
    text: list[str] = []
    calls = []
    for item in response.get("output") or []:
        if item.get("type") == "message":
            text += [p.get("text", "") for p in item.get("content") or [] if "text" in p]
        elif item.get("type") == "function_call":
            calls.append(
                LlmToolCall(item["name"], _args(item.get("arguments")), item.get("call_id"))
            )
    usage = response.get("usage") or {}
    return "".join(text) or None, calls, usage.get("input_tokens"), usage.get("output_tokens")


def _responses_stream(payloads: list[dict[str, Any]]) -> _Reply:
    """Responses API events: the final response when the stream carries it, else the items."""
    items: dict[int, dict[str, Any]] = {}
    text: list[str] = []
    usage: dict[str, Any] = {}
    for p in payloads:
        kind = p.get("type")
        if kind in ("response.completed", "response.incomplete", "response.failed"):
            final: dict[str, Any] = p["response"] if isinstance(p.get("response"), dict) else {}
            if final.get("output") is not None:
                return _responses_reply(final)
            usage = final.get("usage") or {}
        elif kind == "response.output_item.done":
            items[p.get("output_index", len(items))] = p["item"]
        elif kind == "response.output_text.delta":
            text.append(p.get("delta", ""))
    tokens = usage.get("input_tokens"), usage.get("output_tokens")
    if not items:
        return "".join(text) or None, [], *tokens
    reply = _responses_reply({"output": [item for _, item in sorted(items.items())]})
    return reply[0] or "".join(text) or None, reply[1], *tokens


def _sse_payloads(body: bytes) -> list[dict[str, Any]]:
    payloads = []
    for line in body.decode("utf-8", "replace").splitlines():
        if line.startswith("data:"):
            data = line[5:].strip()
            if data and data != "[DONE]":
                payloads.append(_loads(data))
    return payloads


def _parse_stream(api: str, payloads: list[dict[str, Any]]) -> _Reply:
    if api == "responses":
        return _responses_stream(payloads)
    text: list[str] = []
    calls: dict[int, dict[str, Any]] = {}
    tokens_in = tokens_out = None
    for p in payloads:
        if api == "openai":
            if p.get("usage"):
                tokens_in = p["usage"].get("prompt_tokens")
                tokens_out = p["usage"].get("completion_tokens")
            for choice in p.get("choices") or []:
                delta = choice.get("delta") or {}
                text.append(delta.get("content") or "")
                for tc in delta.get("tool_calls") or []:
                    slot = calls.setdefault(tc.get("index", 0), {"args": ""})
                    slot["id"] = tc.get("id") or slot.get("id")
                    fn = tc.get("function") or {}
                    slot["name"] = fn.get("name") or slot.get("name", "")
                    slot["args"] += fn.get("arguments") or ""
            continue
        kind = p.get("type")
        if kind == "message_start":
            tokens_in = p["message"].get("usage", {}).get("input_tokens")
        elif kind == "content_block_start" and p["content_block"].get("type") == "tool_use":
            block = p["content_block"]
            calls[p["index"]] = {"id": block.get("id"), "name": block["name"], "args": ""}
        elif kind == "content_block_delta":
            delta = p["delta"]
            if delta.get("type") == "text_delta":
                text.append(delta.get("text", ""))
            elif delta.get("type") == "input_json_delta":
                calls[p["index"]]["args"] += delta.get("partial_json", "")
        elif kind == "message_delta":
            tokens_out = (p.get("usage") or {}).get("output_tokens", tokens_out)
    tool_calls = [
        LlmToolCall(c.get("name", ""), _args(c["args"]), c.get("id"))
        for _, c in sorted(calls.items())
    ]
    return "".join(text) or None, tool_calls, tokens_in, tokens_out
