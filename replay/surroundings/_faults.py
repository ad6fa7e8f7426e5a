"""Seeded fault injection for offline and sandbox trials: tools and LLM calls that misbehave.

A fault is declared per case (``faults:`` in the case file) or per run
(``replay run --fault KIND[:TOOL][@RATE]``). For each tool call (or LLM
call) the trial's generator — seeded from the run's seed, the case id and
the trial index — draws once per matching fault, in declaration order; the
first fault drawn is injected. The same seed and the same calls inject the
same faults. Every injected fault is a warning in the trial's cassette, and
the faults and seed are in its pins.

Tool faults (``tool`` names the tool; ``*`` any):

- ``timeout``: the call raises ``ToolTimeout`` and the tool does not run.
- ``raise``: the call raises ``InjectedFault`` and the tool does not run.
- ``http_5xx``: the call raises ``ToolHTTPError`` (503) and the tool does not run.
- ``duplicate``: the response comes back twice: the call is delivered twice,
  as an at-least-once transport retrying a lost response does, so the tool
  runs twice and the agent gets the second response. An agent that sends an
  idempotency key survives it; one that does not, writes twice.
- ``truncated``: the tool runs; the agent gets the first half of its result
  (a string cut, a list's first items, a dict's first keys).
- ``stale``: the agent gets the result the same call returned earlier in the
  trial (from before the writes since); the tool does not run. With no
  earlier identical call there is nothing stale to give: the call runs.
- ``malformed_json``: the tool runs; the agent gets its result as JSON text
  cut mid-way (not parseable).

LLM faults (chat calls made through httpx): ``llm_429`` and ``llm_5xx``
answer HTTP 429 / 503 in place of the model, with no request sent.
"""

from __future__ import annotations

import json
import random
import re
from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import Any, Literal, get_args

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from recorder import ConfigError, HttpRequest, HttpResponse, Recording

FaultKind = Literal[
    "timeout",
    "raise",
    "http_5xx",
    "duplicate",
    "truncated",
    "stale",
    "malformed_json",
    "llm_429",
    "llm_5xx",
]
LLM_KINDS = ("llm_429", "llm_5xx")
_LLM_PATHS = ("/chat/completions", "/v1/messages", "/completions", "/responses")
_SPEC = re.compile(r"^(?P<kind>\w+)(?::(?P<tool>[\w.*-]+))?(?:@(?P<rate>[0-9.]+))?$")


class InjectedFault(RuntimeError):
    """A tool call failed because a fault was injected (``raise``)."""


class ToolTimeout(TimeoutError):
    """A tool call timed out because a fault was injected (``timeout``)."""


class ToolHTTPError(InjectedFault):
    """A tool's service answered an HTTP error because a fault was injected (``http_5xx``)."""

    def __init__(self, status: int, message: str) -> None:
        super().__init__(f"HTTP {status}: {message}")
        self.status = status


class Fault(BaseModel):
    """One fault to inject."""

    model_config = ConfigDict(extra="forbid", frozen=True, use_attribute_docstrings=True)

    kind: FaultKind
    tool: str = "*"
    """The tool whose calls may fail (``*``: any); ignored for LLM faults."""
    rate: float = Field(default=1.0, gt=0.0, le=1.0)
    """Chance that a matching call gets the fault."""
    times: int | None = Field(default=None, ge=1)
    """At most this many injections per trial (unset: no limit)."""

    @classmethod
    def parse(cls, text: str) -> Fault:
        """Parse ``KIND[:TOOL][@RATE]``, e.g. ``duplicate:issue_refund``, ``llm_429@0.3``.

        Raises:
            ConfigError: The text is not a fault.
        """
        match = _SPEC.match(text.strip())
        kinds = ", ".join(get_args(FaultKind))
        if match is None or match["kind"] not in get_args(FaultKind):
            raise ConfigError(f"fault {text!r} is not KIND[:TOOL][@RATE]; kinds: {kinds}")
        try:
            data = {"kind": match["kind"], "tool": match["tool"] or "*", "rate": match["rate"] or 1}
            return cls.model_validate(data)
        except ValidationError as exc:
            raise ConfigError(f"fault {text!r}: {exc.errors()[0]['msg']}") from None

    def __str__(self) -> str:
        where = f":{self.tool}" if self.kind not in LLM_KINDS and self.tool != "*" else ""
        rate = f"@{self.rate:g}" if self.rate != 1.0 else ""
        return f"{self.kind}{where}{rate}"


class FaultInjector:
    """The faults of one trial: wraps its tool dispatcher and answers its LLM calls.

    Args:
        faults: The faults, in the order they are drawn.
        seed: The run's fault seed.
        case_id: With ``index``, makes each trial's draws its own.
        index: The trial's index.
    """

    def __init__(self, faults: Sequence[Fault], seed: int, case_id: str, index: int) -> None:
        self.faults = tuple(faults)
        self.seed = seed
        self._rng = random.Random(f"{seed}/{case_id}/{index}")
        self._used = [0] * len(self.faults)
        self._seen: dict[str, Any] = {}
        self.recording: Recording | None = None
        """The trial's recording, told of every injected fault (set once it is open)."""
        self.injected: list[str] = []

    def pins(self) -> dict[str, str]:
        """What goes in the trial's pins."""
        return {"faults": ",".join(str(f) for f in self.faults), "fault_seed": str(self.seed)}

    def _draw(self, llm: bool, tool: str = "") -> Fault | None:
        for n, fault in enumerate(self.faults):
            if (fault.kind in LLM_KINDS) != llm or (not llm and fault.tool not in ("*", tool)):
                continue
            if fault.times is not None and self._used[n] >= fault.times:
                continue
            if self._rng.random() < fault.rate:
                self._used[n] += 1
                return fault
        return None

    def _note(self, fault: Fault, what: str) -> None:
        message = f"fault injected: {fault.kind} on {what}"
        self.injected.append(message)
        if self.recording is not None:
            self.recording.warn(message)

    def wrap(
        self, call_tool: Callable[[str, Mapping[str, Any]], Any]
    ) -> Callable[[str, Mapping[str, Any]], Any]:
        """Return ``call_tool`` with this trial's tool faults injected."""
        if not any(f.kind not in LLM_KINDS for f in self.faults):
            return call_tool

        def faulty(name: str, arguments: Mapping[str, Any]) -> Any:
            key = json.dumps([name, arguments], sort_keys=True, default=str)
            fault = self._draw(llm=False, tool=name)
            if fault is None:
                return self._remember(key, call_tool(name, arguments))
            what = f"{name}({', '.join(f'{k}={v!r}' for k, v in arguments.items())})"
            kind = fault.kind
            if kind == "stale" and key not in self._seen:
                return self._remember(key, call_tool(name, arguments))  # nothing stale yet
            self._note(fault, what)
            if kind == "timeout":
                raise ToolTimeout(f"{name} timed out")
            if kind == "raise":
                raise InjectedFault(f"{name} failed")
            if kind == "http_5xx":
                raise ToolHTTPError(503, f"{name}: service unavailable")
            if kind == "stale":
                return self._seen[key]
            result = self._remember(key, call_tool(name, arguments))
            if kind == "duplicate":
                return call_tool(name, arguments)
            if kind == "truncated":
                return _truncated(result)
            text = json.dumps(result, default=str)  # malformed_json
            return text[: max(1, len(text) // 2)]

        return faulty

    def _remember(self, key: str, result: Any) -> Any:
        self._seen.setdefault(key, result)
        return result

    def http(self, request: HttpRequest) -> HttpResponse | None:
        """Answer an LLM call with an injected 429/503, or None to let it through."""
        if not is_llm_request(request):
            return None
        path = request.url.split("?", 1)[0]
        fault = self._draw(llm=True)
        if fault is None:
            return None
        self._note(fault, f"{request.method} {path}")
        status = 429 if fault.kind == "llm_429" else 503
        body = {"error": {"message": f"injected fault: HTTP {status}", "type": fault.kind}}
        headers = [("content-type", "application/json")]
        if status == 429:
            headers.append(("retry-after", "0"))
        return HttpResponse(status=status, headers=headers, chunks=[json.dumps(body).encode()])


def is_llm_request(request: HttpRequest) -> bool:
    """Whether a request is an LLM call (chat completions, Responses, Anthropic messages)."""
    return request.url.split("?", 1)[0].endswith(_LLM_PATHS)


def _truncated(result: Any) -> Any:
    if isinstance(result, str):
        return result[: len(result) // 2]
    if isinstance(result, list):
        return result[: len(result) // 2]
    if isinstance(result, dict):
        keys = list(result)[: len(result) // 2]
        return {k: result[k] for k in keys}
    return None


def parse_faults(texts: Iterable[str]) -> list[Fault]:
    """Parse ``--fault`` options."""
    return [Fault.parse(t) for t in texts]
