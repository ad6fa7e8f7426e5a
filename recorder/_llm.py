"""Reading LLM calls out of recorded HTTP exchanges (OpenAI and Anthropic shapes).

Used for automatic pins, the final answer, token usage and the transcript.
Parsing is best effort: an exchange that does not look like an LLM call
yields ``None`` and is shown as plain HTTP.
"""

from __future__ import annotations

import hashlib
import json
import re
import zlib
from dataclasses import dataclass, field, replace
from typing import Any, Literal
from urllib.parse import urlsplit

from ._schema import HttpEvent, HttpResponse

SAMPLING_KEYS = (
    "temperature",
    "top_p",
    "top_k",
    "max_tokens",
    "max_completion_tokens",
    "seed",
    "n",
    "stop",
    "stop_sequences",
    "presence_penalty",
    "frequency_penalty",
    "tool_choice",
    "response_format",
    "reasoning_effort",
)


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

    api: Literal["openai", "anthropic"]
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


def short_hash(value: Any) -> str:
    """Return the first 16 hex digits of the sha256 of a value's canonical JSON."""
    text = value if isinstance(value, str) else json.dumps(value, sort_keys=True, default=str)
    return hashlib.sha256(text.encode()).hexdigest()[:16]


def api_of(url: str) -> Literal["openai", "anthropic"] | None:
    """Return which LLM API a request URL belongs to, if any."""
    try:
        path = urlsplit(url).path.rstrip("/")
    except ValueError:
        return None
    if path.endswith("/chat/completions"):
        return "openai"
    if path.endswith("/messages"):
        return "anthropic"
    return None


def response_body(response: HttpResponse) -> bytes:
    """Return the response body with gzip/deflate content-encoding undone."""
    body = b"".join(response.chunks)
    encoding = next((v for k, v in response.headers if k == "content-encoding"), "").lower()
    try:
        if encoding == "gzip":
            return zlib.decompress(body, 16 + zlib.MAX_WBITS)
        if encoding == "deflate":
            return zlib.decompress(body)
    except zlib.error:
        return body
    return body


def llm_call(event: HttpEvent, *, request: bool = True) -> LlmCall | None:
    """Return the LLM view of an HTTP event, or None if it is not an LLM call.

    Never raises: a body that does not have the expected shape yields None
    (not an LLM call) or a call without its reply. With ``request=False`` the
    request body (the whole conversation so far) is not parsed: only its
    model is read, and messages, tools and sampling are left empty.
    """
    api = api_of(event.request.url)
    if api is None:
        return None
    try:
        if request:
            call = _parse_request(api, json.loads(event.request.body or b"{}"))
        else:
            found = _MODEL.search(event.request.body)
            model = found.group(1).decode("utf-8", "replace") if found else None
            call = LlmCall(
                api, model, None, [], [], {}, stream=b'"stream":true' in event.request.body
            )
    except _SHAPE_ERRORS:
        return None
    if event.response is None or event.response.status >= 400:
        return call
    body = response_body(event.response)
    try:
        if body.lstrip()[:1] == b"{":
            reply = _parse_reply(api, json.loads(body))
        else:
            reply = _parse_stream(api, _sse_payloads(body))
        text, tool_calls, tokens_in, tokens_out = reply
        return replace(
            call,
            reply_text=text if isinstance(text, str) or text is None else str(text),
            reply_tool_calls=tool_calls,
            input_tokens=_count(tokens_in),
            output_tokens=_count(tokens_out),
        )
    except _SHAPE_ERRORS:
        return call


_SHAPE_ERRORS = (ValueError, KeyError, TypeError, IndexError, AttributeError)
# Inside a JSON string a quote is always escaped, so this only matches a "model" key.
_MODEL = re.compile(rb'"model"\s*:\s*"((?:[^"\\]|\\.)*)"')


def _count(value: Any) -> int:
    return int(value) if isinstance(value, (int, float)) and value == value else 0


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


def _parse_request(api: Literal["openai", "anthropic"], req: Any) -> LlmCall:
    if not isinstance(req, dict):
        raise TypeError("request body is not an object")
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


_Reply = tuple[str | None, list[LlmToolCall], int, int]


def _args(raw: Any) -> Any:
    if not isinstance(raw, str):
        return raw
    try:
        return json.loads(raw) if raw else {}
    except ValueError:
        return raw


def _parse_reply(api: str, body: dict[str, Any]) -> _Reply:
    usage = body.get("usage") or {}
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
            usage.get("prompt_tokens", 0),
            usage.get("completion_tokens", 0),
        )
    blocks = body.get("content") or []
    text = "".join(b.get("text", "") for b in blocks if b.get("type") == "text") or None
    calls = [
        LlmToolCall(b["name"], b.get("input"), b.get("id"))
        for b in blocks
        if b.get("type") == "tool_use"
    ]
    return text, calls, usage.get("input_tokens", 0), usage.get("output_tokens", 0)


def _sse_payloads(body: bytes) -> list[dict[str, Any]]:
    payloads = []
    for line in body.decode("utf-8", "replace").splitlines():
        if line.startswith("data:"):
            data = line[5:].strip()
            if data and data != "[DONE]":
                payloads.append(json.loads(data))
    return payloads


def _parse_stream(api: str, payloads: list[dict[str, Any]]) -> _Reply:
    text: list[str] = []
    calls: dict[int, dict[str, Any]] = {}
    tokens_in = tokens_out = 0
    for p in payloads:
        if api == "openai":
            if p.get("usage"):
                tokens_in = p["usage"].get("prompt_tokens", 0)
                tokens_out = p["usage"].get("completion_tokens", 0)
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
            tokens_in = p["message"].get("usage", {}).get("input_tokens", 0)
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
