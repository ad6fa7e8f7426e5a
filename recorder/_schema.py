"""Cassette records: the on-disk contract, as pydantic models.

A cassette is a stream of records: one ``Header``, then ``Event``s in the
order they finished, then one ``Footer``. Each record carries a ``kind``.
``make schema`` writes the JSON Schema committed as ``recorder/cassette.schema.json``.
"""

from __future__ import annotations

import json
from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field, TypeAdapter, field_validator

from ._bounds import decode_body

# Bump FORMAT_VERSION on any change to these models: records forbid unknown
# fields, so even a new optional field makes older readers refuse a newer
# file (with a clear message) rather than misread it. Keep reading old
# versions by listing them in READABLE_VERSIONS.
FORMAT_VERSION = 5
READABLE_VERSIONS: tuple[int, ...] = (1, 2, 3, 4, 5)
# 2: user turns (UserEvent) and Usage.user_turns; a version-1 file is a version-2 file without them.
# 3: ignored hosts (Header.ignore_hosts, Usage.ignored) and Usage.llm_calls_without_usage; an
#    older file ignored no host and counted every call's usage (missing counted as 0).
# 4: sandbox violations (ViolationEvent); an older file recorded none as such (an in-process
#    sandbox's refused request is an HttpEvent with a SandboxViolation error in every version).
# 5: a recording that stopped early, its agent going on (Footer.stopped), and redaction of
#    tool calls by path (RedactionSpec.tool_paths); an older file never stopped early and
#    redacted no tool call.

Json = Any
"""Any value JSON can hold (dicts, lists, strings, numbers, booleans, null)."""

Scalar = str | int | float | bool | None


class _Record(BaseModel):
    model_config = ConfigDict(
        extra="forbid",
        frozen=True,
        use_attribute_docstrings=True,
        ser_json_bytes="base64",
        val_json_bytes="base64",
        allow_inf_nan=False,  # times, budgets: no reader after this one takes inf or nan
    )


class Pins(_Record):
    """Everything that defines the version of the agent that made a trial."""

    model: str | None = None
    """Model id sent in the LLM requests; several are joined with '+', in order seen."""
    sampling: dict[str, Json] = Field(default_factory=dict)
    """Sampling settings of the first LLM request (temperature, top_p, max_tokens, seed...)."""
    system_prompt_hash: str | None = None
    """sha256 (first 16 hex digits) of the system prompt of the first LLM request."""
    tool_schema_hash: str | None = None
    """sha256 (first 16 hex digits) of the canonical JSON of the tools offered to the model."""
    agent_version: str | None = None
    """Agent code version: given by the user, else the git commit of the working directory."""
    fixture_hash: str | None = None
    """sha256 (first 16 hex digits) of the starting world."""
    grader_version: str | None = None
    """Version of the graders that judged the trial, when known."""
    budget: dict[str, float] = Field(default_factory=dict)
    """Limits the trial ran under (steps, cost...)."""
    user: dict[str, str] = Field(default_factory=dict)
    """Pins added by the user."""


class RedactionSpec(_Record):
    """The redaction settings a cassette was recorded with."""

    headers: list[str] = Field(default_factory=list)
    """Header names whose values were replaced."""
    query: list[str] = Field(default_factory=list)
    """Query-parameter names whose values were replaced."""
    body_paths: list[str] = Field(default_factory=list)
    """Dotted JSON body paths whose values were replaced."""
    tool_paths: list[str] = Field(default_factory=list)
    """Dotted tool-call paths (``TOOL.args.PATH``, ``TOOL.result.PATH``) whose values were
    replaced (none before version 5)."""


class Header(_Record):
    """First record of every cassette."""

    kind: Literal["header"] = "header"
    version: int = FORMAT_VERSION
    """Format version; see FORMAT_VERSION."""
    case_id: str | None = None
    """Id of the case this trial ran, if any."""
    trial: int | None = None
    """Index of this trial among the k trials of its case."""
    pins: Pins = Field(default_factory=Pins)
    """Pins known when recording started; the footer holds the complete set."""
    fixture_hash: str | None = None
    """Hash of the starting world (same as pins.fixture_hash)."""
    fixture_source: str | None = None
    """Where the starting world came from (a path), so the case can be rebuilt: the
    fixture file, or the database file of a world recorded live (its state at the start
    is that file's with the recorded changes undone: ``replay promote`` does so)."""
    redaction: RedactionSpec = Field(default_factory=lambda: RedactionSpec())
    """What was redacted while recording; playback redacts the same to match."""
    ignore_hosts: list[str] | None = None
    """Hosts (``host`` or ``host/path-prefix``) whose calls were not recorded; playback
    ignores the same. None in files older than version 3."""
    started_at: str
    """UTC time recording started, ISO 8601."""
    recorder_version: str
    """agent-replay version that wrote the file."""


class ErrorInfo(_Record):
    """An exception, as recorded."""

    type: str
    """Qualified class name of the exception."""
    message: str
    """str() of the exception."""
    traceback: str | None = None
    """Formatted traceback, when one was available."""


class HttpRequest(_Record):
    """One HTTP request, redacted."""

    method: str
    url: str
    """Credentials removed (before version 5 they were ``[REDACTED]@``: removed on reading)."""
    headers: list[tuple[str, str]]
    """Header (name, value) pairs in order; names lower-case."""
    body: bytes = b""

    @field_validator("url")
    @classmethod
    def _no_userinfo(cls, url: str) -> str:
        return url.replace("://[REDACTED]@", "://", 1)


class HttpResponse(_Record):
    """One HTTP response, redacted, with its body as the chunks that arrived."""

    status: int
    headers: list[tuple[str, str]]
    """Header (name, value) pairs in order; names lower-case."""
    chunks: list[bytes] = Field(default_factory=list)
    """Body chunks as they came off the wire (decoded of transfer encoding only)."""
    complete: bool = True
    """False when the body was not read to its end (closed early, or an error cut it)."""

    def body(self) -> bytes | None:
        """The body with its gzip/deflate content encoding undone, within the reader's limits.

        None when it cannot be (past ``recorder._bounds``' limits, or damaged).
        """
        joined = b"".join(self.chunks)
        encoding = next((v for k, v in self.headers if k == "content-encoding"), "").lower()
        return decode_body(joined, encoding) if encoding else joined


class HttpEvent(_Record):
    """One HTTP exchange (LLM calls included)."""

    kind: Literal["http"] = "http"
    t: float
    """Seconds from the start of recording to the request being sent."""
    duration: float
    """Seconds until the response body ended (or the error)."""
    ttfb: float | None = None
    """Seconds from sending to the response headers."""
    via: str
    """Which interceptor saw the call (httpx, httpx2, vcrpy)."""
    request: HttpRequest
    response: HttpResponse | None = None
    error: ErrorInfo | None = None
    """Transport error: instead of a response, or after part of its body."""


class RowChange(_Record):
    """One row inserted, deleted or updated in one table."""

    key: list[Scalar]
    """Primary-key values (rowid for tables without one)."""
    before: dict[str, Json] | None = None
    """Values before: None for an insert; the changed fields only for an update."""
    after: dict[str, Json] | None = None
    """Values after: None for a delete; the changed fields only for an update."""


WorldDelta = dict[str, list[RowChange]]
"""Changes per table name."""


class ToolEvent(_Record):
    """One tool call: arguments, result or exception, and its effect on the world."""

    kind: Literal["tool"] = "tool"
    t: float
    """Seconds from the start of recording to the call."""
    duration: float
    name: str
    args: dict[str, Json]
    """Arguments by parameter name, as JSON values."""
    effect: Literal["read", "write"]
    """Whether the tool declares that it writes the world."""
    result: Json = None
    """Return value as JSON; None when the tool raised."""
    error: ErrorInfo | None = None
    """Exception the tool raised, if any."""
    delta: WorldDelta | None = None
    """Rows this call changed, per table; None when no world was attached."""


class ErrorEvent(_Record):
    """An exception that escaped the agent code inside the recording."""

    kind: Literal["error"] = "error"
    t: float
    error: ErrorInfo


class WarningEvent(_Record):
    """Something the recording could not capture faithfully."""

    kind: Literal["warning"] = "warning"
    t: float
    message: str
    delta: WorldDelta | None = None
    """World changes made outside any tool call, when that is what the warning is about."""


class ViolationEvent(_Record):
    """A sandboxed agent tried to reach what it may not, and was refused."""

    kind: Literal["violation"] = "violation"
    t: float
    action: str
    """``connect``, ``send`` (a datagram with an address), ``dns`` (a name looked up),
    ``write`` (a file opened to write on a read-only mount), ``read`` (a host file the
    sandbox does not have), ``ptrace`` (a reach into another process) or ``http`` (an
    in-process request to a host not allowed)."""
    target: str
    """What it aimed at: ``host:port``, ``[v6]:port``, ``unix:/path``, ``pid N``, a URL."""
    via: str
    """What saw and refused it: ``walls`` (the process's seccomp supervisor) or
    ``http`` (the in-process sandbox's HTTP check)."""


class UserEvent(_Record):
    """One turn of the (simulated) user: what the agent said, and what the user answered."""

    kind: Literal["user"] = "user"
    t: float
    duration: float
    said: str | None = None
    """The agent's message the user answers; None for the user's opening message."""
    reply: str | None = None
    """The user's answer; None when the user could not answer (see ``error``)."""
    stop: bool = False
    """The user ended the conversation with this answer."""
    source: str = "live"
    """'live' (a simulated user answered now) or 'frozen' (answered from a recording)."""
    model: str | None = None
    """The model playing the user, when live."""
    error: ErrorInfo | None = None
    """Why the simulated user could not answer (its endpoint failed...)."""


class Usage(_Record):
    """Counts over the whole trial."""

    llm_calls: int = 0
    http_calls: int = 0
    tool_calls: int = 0
    """Tool calls; a third-party MCP server's protocol requests (``mcp:SERVER:METHOD``:
    ``initialize``, ``tools/list``...) are not among them (an older footer counted them)."""
    user_turns: int = 0
    input_tokens: int = 0
    output_tokens: int = 0
    llm_calls_without_usage: int = 0
    """LLM calls whose reply reported no token usage (a stream without it): the token
    totals leave them out, so they are a lower bound when this is not 0."""
    ignored: dict[str, int] = Field(default_factory=dict)
    """Calls to ignored hosts (never recorded), per ``ignore_hosts`` entry."""


class Timings(_Record):
    """Seconds spent, over the whole trial."""

    total: float = 0.0
    llm: float = 0.0
    tools: float = 0.0


class Stopped(_Record):
    """Where and why a recording stopped before its end; the agent's run went on without it."""

    t: float
    """Seconds from the start of recording to the failure."""
    events: int
    """Events the cassette keeps: every one recorded before the failure, complete."""
    lost: str | None = None
    """The first record that could not be written (``tool refund_order``, ``http POST URL``),
    or None when no one record failed (the disk full after the last one, the file removed)."""
    error: ErrorInfo
    """Why: the error met writing (``OSError``, ``[Errno 28] No space left on device``...)."""

    def describe(self) -> str:
        """One line: where and why the recording stopped."""
        why = f"({self.error.type.rsplit('.', 1)[-1]}: {self.error.message})"
        if self.lost == "the header":
            return f"recording could not start {why}"
        what = f": could not write {self.lost}" if self.lost else ""
        return f"recording stopped at {self.t:.2f}s after {self.events} events{what} {why}"


class Footer(_Record):
    """Last record of a cassette that was closed properly."""

    kind: Literal["footer"] = "footer"
    status: Literal["ok", "error"]
    """'error' when an exception escaped the agent code, or the recording stopped early
    (``stopped`` says where and why: the cassette is not the whole run)."""
    final_answer: str | None = None
    """The agent's final answer, if it gave one."""
    usage: Usage = Field(default_factory=Usage)
    timings: Timings = Field(default_factory=Timings)
    state_diff: WorldDelta | None = None
    """Net change to the world over the trial; None when no world was attached."""
    pins: Pins = Field(default_factory=Pins)
    """Complete pins: the header's plus those observed in the LLM requests."""
    stopped: Stopped | None = None
    """Set when the recording stopped early (a full disk, an I/O error, a record that could
    not be encoded): what happened after it is not in the cassette. The totals above count
    the events kept."""


Event = Annotated[
    HttpEvent | ToolEvent | UserEvent | ErrorEvent | WarningEvent | ViolationEvent,
    Field(discriminator="kind"),
]
Record = Annotated[
    Header
    | HttpEvent
    | ToolEvent
    | UserEvent
    | ErrorEvent
    | WarningEvent
    | ViolationEvent
    | Footer,
    Field(discriminator="kind"),
]
RECORD_ADAPTER: TypeAdapter[Record] = TypeAdapter(Record)


def json_schema() -> dict[str, Any]:
    """Return the JSON Schema of one cassette record."""
    schema = RECORD_ADAPTER.json_schema()
    schema["title"] = "agent-replay cassette record"
    schema["$comment"] = f"format version {FORMAT_VERSION}"
    return schema


def schema_text() -> str:
    """Return the JSON Schema as committed in ``recorder/cassette.schema.json``."""
    return json.dumps(json_schema(), indent=2, sort_keys=True) + "\n"
