"""The recording session: ``with record(path, ...) as rec:`` around agent code."""

from __future__ import annotations

import sqlite3
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from types import TracebackType
from typing import TYPE_CHECKING, Any
from urllib.parse import urlsplit

from . import _session
from ._capture import ChangeCapture
from ._derive import footer_for, unwrapped_tools
from ._errors import SandboxViolation
from ._hooks import Hooks
from ._ignore import DEFAULT_IGNORE_HOSTS, EMPTY_SUCCESS, IgnoredHosts
from ._provenance import database_file, pins_for
from ._redact import Redaction, scrub_response
from ._schema import (
    ErrorEvent,
    Footer,
    Header,
    HttpEvent,
    HttpRequest,
    HttpResponse,
    Pins,
    RedactionSpec,
    ToolEvent,
    UserEvent,
    ViolationEvent,
    WarningEvent,
    WorldDelta,
)
from ._secrets import Secrets
from ._sse import stream_ended
from ._tape import Tape
from ._turns import Turn, Turns
from ._version import __version__

if TYPE_CHECKING:
    from ._playback import Playback


Done = Callable[[list[bytes], BaseException | None, bool], None]


@dataclass(frozen=True, slots=True)
class ToolStart:
    """When a tool call started, and its turn on the world (None without a world)."""

    t0: float
    turn: Turn | None


class Recording(Tape):
    """One trial being recorded into one cassette. Create it with ``record()``.

    Every LLM/HTTP exchange made through httpx, httpx2 (the official OpenAI
    and Anthropic SDKs), requests or urllib3, and every call of a ``@tool``
    function, is appended to the cassette as it completes. An exception
    escaping the block is recorded as an error event, the cassette is
    closed with a footer, and the exception propagates.

    Secrets never reach the file: ``redaction`` says what to replace where it
    stands (headers, query values, body and tool-call paths; every header and
    form field named like a secret, ``secret_named``), and every value
    replaced, with the values given as ``secrets`` (keys, passwords, tokens the
    agent may see), is scrubbed from every byte written after it is known:
    request and response bodies (decoded, and across chunks), headers, tool
    arguments, results, errors and deltas, warnings, user turns, the answer and
    the pins. A value learned mid-session (an auth header) cannot be scrubbed
    from what was written before it: list it in ``secrets`` to be sure.

    A recording that cannot start or go on (a full disk, an I/O error, its
    file or folder removed, a record that cannot be encoded) stops; the agent
    does not: the cassette keeps every record written before and its footer
    says where and why it stopped (``Footer.stopped``), and one warning is
    logged (logger ``recorder``). With ``strict=True`` the failure raises
    ``RecordingFailed`` instead of the warning (at the call that met it, and
    again when the block ends), for tests and CI; the cassette ends the same.

    A harness that runs agents (replay) changes what the agent meets while it
    is recorded through ``hooks`` (a ``Hooks``: HTTP answered from a cassette,
    hosts refused, faults injected, tool results checked, late calls refused,
    the clocks); the other keywords are the ones a person recording their own
    agent uses (see ``Hooks`` for the line between them).
    """

    playback = False

    def __init__(
        self,
        path: str | Path,
        *,
        case_id: str | None = None,
        trial: int | None = None,
        pins: Pins | Mapping[str, str] | None = None,
        world: sqlite3.Connection | None = None,
        fixture_source: str | None = None,
        redaction: Redaction | None = None,
        secrets: Secrets | Iterable[str] = (),
        agent_version: str | None = None,
        overwrite: bool = False,
        ignore_hosts: Iterable[str] | None = None,
        strict: bool = False,
        hooks: Hooks | None = None,
    ) -> None:
        self.hooks = hooks if hooks is not None else Hooks()
        """What a harness running the agent added (see ``Hooks``); none for a plain recording."""
        self.ignore_hosts = IgnoredHosts(
            DEFAULT_IGNORE_HOSTS if ignore_hosts is None else ignore_hosts
        )
        """Calls to these are not recorded, only counted (see ``recorder._ignore``)."""
        self._ignored: dict[str, int] = {}
        self._channels = IgnoredHosts(())
        self.world = world
        redaction = redaction or Redaction()
        seen = _shared(secrets, self.hooks.source)
        self._pins = pins_for(pins, world, agent_version, seen)
        self._pending: dict[int, tuple[Done, list[bytes], list[tuple[str, str]]]] = {}
        self._answer: str | None = None
        self._token: Any = None
        self._turns: Turns | None = None
        self._capture: ChangeCapture | None = None
        header = Header(
            case_id=case_id,
            trial=trial,
            pins=self._pins,
            fixture_hash=self._pins.fixture_hash,
            fixture_source=fixture_source or (database_file(world) if world else None),
            redaction=RedactionSpec(**redaction.spec()),
            ignore_hosts=list(self.ignore_hosts.entries),
            started_at=self.hooks.wall_clock().isoformat(),
            recorder_version=__version__,
        )
        super().__init__(
            Path(path),
            header,
            overwrite=overwrite,
            strict=strict,
            redaction=redaction,
            secrets=seen,
            clock=self.hooks.clock,
        )
        # After the writer: if the file cannot be created, the user's connection is untouched.
        try:
            self._capture = ChangeCapture.begin(world) if world is not None else None
        except BaseException as exc:
            self._capture = None
            self._append(ErrorEvent(t=self.now(), error=self._error(exc)))
            self.close(status="error")
            raise
        if self._capture is not None:
            self._turns = Turns(self._capture.take, self._aside, self.warn)

    # -- the context manager -------------------------------------------------

    def __enter__(self) -> Recording:
        self._token = _session.enter(self)
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        try:
            self._closing = True
            if exc is not None:
                self._append(ErrorEvent(t=self.now(), error=self._error(exc)))
            self.close(status="error" if exc is not None else "ok")
        finally:
            _session.leave(self, self._token)
        if self._failure is not None and exc is not self._failure:
            raise self._failure  # strict: even when the agent swallowed it

    # -- what agent code may call --------------------------------------------

    def answer(self, text: str) -> None:
        """Set the trial's final answer (otherwise: the last LLM reply without tool calls)."""
        self._answer = self._secrets.scrub(text)

    def warn(self, message: str, delta: WorldDelta | None = None) -> None:
        """Record that something could not be captured faithfully."""
        seen = self._secrets
        message, delta = seen.scrub(message), seen.scrub_value(delta) if delta else None
        self._append(WarningEvent(t=self.now(), message=message, delta=delta))

    def violation(self, action: str, target: str, via: str) -> None:
        """Record that the sandboxed agent tried to reach ``target`` and was refused."""
        target = self._secrets.scrub(target)
        self._append(ViolationEvent(t=self.now(), action=action, target=target, via=via))

    def user_turn(self, event: UserEvent) -> None:
        """Record one turn of the user channel (see ``replay``'s simulated user)."""
        if self._secrets:
            said, reply = event.said, event.reply
            event = event.model_copy(
                update={
                    "said": self.scrub(said) if said is not None else None,
                    "reply": self.scrub(reply) if reply is not None else None,
                }
            )
        self._append(event)

    def scrub(self, value: Any) -> Any:
        """Return text or a JSON-ready value with every secret this recording knows replaced.

        What a recording writes passes through this; a replay source passes what
        it matches through it too (an agent's message to a frozen user, say).
        """
        return self._secrets.scrub_value(value)

    def scrub_call(self, name: str, args: Any) -> Any:
        """Return a tool call's arguments as recorded: redacted by path, then scrubbed."""
        return self.scrub(self.redaction.redact_tool(name, "args", args, self._secrets))

    def close(self, status: str = "ok") -> None:
        """Finish pending responses, write the footer and close the file."""
        if self._closed:
            return
        self._closing = True  # from here a failure is noted, never raised mid-way
        for done, chunks, headers in list(self._pending.values()):
            done(chunks, None, False)
            if not stream_ended(headers, chunks):
                note = "a response body was neither read to its end nor closed; kept what arrived"
                self.warn(note)
        if self._turns is not None and self._turns.holder is not None:
            self.warn(
                f"tool {self._turns.holder.name} was still running when the recording closed: "
                "its changes so far are recorded as made outside any tool call"
            )
        if self._capture is not None:
            try:
                self._aside(*self._capture.take())
            finally:
                self._capture.close()
                self._capture = None
        try:
            footer = footer_for(
                self._events,
                base_pins=self._pins,
                status=status,
                total=self.now(),
                final_answer=self._answer,
                world_attached=self.world is not None,
                ignored=self._ignored,
            )
        except Exception as exc:  # a footer we cannot derive must not cost the cassette its end
            self.warn(f"could not summarise the trial: {type(exc).__name__}: {exc}")
            footer = Footer(status="error", final_answer=self._answer, pins=self._pins)
        usage = footer.usage  # (the LLM called again after asking for tools, none recorded)
        if status == "ok" and usage.llm_calls > 1 and not usage.tool_calls:
            unwrapped = unwrapped_tools(self._events)
            if unwrapped:
                self.warn(unwrapped)
        self._end(footer)

    # -- what interceptors call ----------------------------------------------

    def channel(self, address: str) -> None:
        """Let requests to ``address`` (``host:port``) go out as they are, in every mode.

        For the harness's own channels of this trial (its MCP tool server): what
        flows there is recorded at its own level (tool events), not as HTTP.
        """
        self._channels = IgnoredHosts((*self._channels.entries, address))

    def ignored(self, url: str) -> HttpResponse | bool:
        """Whether a request goes to an ignored host (then it is counted, never recorded).

        Returns False for a host that is not ignored; True when the request is to
        go out as it is, unrecorded (a plain recording, or one of the trial's own
        channels); the response to answer it with when this session answers
        calls itself (a frozen LLM, the sandbox).
        """
        if self._channels.entries and self._channels.match(url) is not None:
            return True
        entry = self.ignore_hosts.match(url)
        source = self.hooks.source
        if entry is None and source is not None:  # what the frozen recording ignored
            entry = source.ignore_hosts.match(url)
        if entry is None:
            return False
        with self._lock:
            self._ignored[entry] = self._ignored.get(entry, 0) + 1
        if source is not None or self.hooks.allowed_hosts is not None:
            return EMPTY_SUCCESS
        return True

    def check_host(self, url: str) -> None:
        """Refuse a request to a host outside ``Hooks.allowed_hosts`` (when set)."""
        allowed = self.hooks.allowed_hosts
        if allowed is None:
            return
        host = urlsplit(url).hostname or ""
        if host not in allowed:
            shown = self.redaction.redact_url(url, self._secrets)
            self.violation("http", shown, "http")
            raise SandboxViolation(url=shown, allowed=tuple(allowed))

    def track(
        self, done: Done, chunks: list[bytes], headers: Sequence[tuple[str, str]] = ()
    ) -> Done:
        """Register a response body in flight; the returned callback fires once.

        ``chunks`` is the list the body's chunks are collected in, so a body still
        open at close is recorded with what arrived; with the response's ``headers``,
        an LLM stream that reached its end event is not warned of then (a client that
        stops reading at ``[DONE]`` and never closes the response read all of it).
        """
        key = id(done)

        def once(got: list[bytes], error: BaseException | None, complete: bool) -> None:
            with self._lock:
                if self._pending.pop(key, None) is None:
                    return
            done(got, error, complete)

        with self._lock:
            self._pending[key] = (once, chunks, list(headers))
        return once

    def record_http(
        self,
        via: str,
        request: HttpRequest,
        t0: float,
        ttfb: float | None,
        head: tuple[int, list[tuple[str, str]]] | None,
        chunks: list[bytes],
        error: BaseException | None,
        complete: bool = True,
    ) -> None:
        """Append one HTTP exchange, redacted."""
        red, seen = self.redaction, self._secrets
        try:  # a body that cannot be redacted stops the recording, never the agent
            req = red.redact_request(request, seen)
            response = None
            if head is not None:
                headers = seen.scrub_pairs(red.redact_headers(head[1], seen))
                encoding = next((v for k, v in headers if k == "content-encoding"), "")
                body = red.redact_response_body(list(chunks), encoding, seen)
                response = HttpResponse(
                    status=head[0],
                    headers=headers,
                    chunks=scrub_response(body, encoding, seen),
                    # an LLM stream's own end event decides, else whether it was read to its end
                    complete=error is None and _stream_complete(head[1], chunks, complete),
                )
            event = HttpEvent(
                t=t0,
                duration=self.now() - t0,
                ttfb=ttfb,
                via=via,
                request=req,
                response=response,
                error=self._error(error) if error is not None else None,
            )
        except Exception as exc:
            self._unrecordable(exc, f"http {request.method} {red.redact_url(request.url)}")
            return
        self._append(event)

    def tool_started(self, name: str) -> ToolStart:
        """Mark the start of a sync tool call: wait for its turn on the world (``_turns``)."""
        turn = self._turns.begin(name) if self._turns is not None else None
        return ToolStart(self.now(), turn)  # the call's time starts once it has its turn

    async def tool_started_async(self, name: str) -> ToolStart:
        """Mark the start of an async tool call: await its turn on the world."""
        turn = await self._turns.begin_async(name) if self._turns is not None else None
        return ToolStart(self.now(), turn)

    def tool_finished(
        self,
        name: str,
        args: dict[str, Any],
        writes: bool,
        start: ToolStart | None,
        result: Any,
        failure: BaseException | None,
        jsonable: Callable[[Any], Any],
    ) -> None:
        """Append one tool call with its result or exception and its world delta.

        ``start`` is None for a call that never ran (its arguments did not fit).
        """
        t0 = start.t0 if start is not None else self.now()
        duration = self.now() - t0
        delta: WorldDelta | None = None
        if start is not None and start.turn is not None and self._turns is not None:
            delta, notes = self._turns.end(start.turn)
            for note in notes:
                self.warn(f"tool {name}: {note}")
            if delta and not writes:
                self.warn(f"tool {name} is declared read-only but changed the world")
        elif self._capture is not None:
            delta = {}
        red, seen = self.redaction, self._secrets
        try:  # a value too deep or not JSON stops the recording, never the agent
            args = self.scrub_call(name, jsonable(args))
            if failure is None:
                result = self.scrub(red.redact_tool(name, "result", jsonable(result), seen))
            event = ToolEvent(
                t=t0,
                duration=duration,
                name=name,
                args=args,
                effect="write" if writes else "read",
                result=None if failure is not None else result,
                error=self._error(failure) if failure is not None else None,
                delta=self.scrub(delta) if delta else delta,
            )
        except Exception as exc:
            self._unrecordable(exc, f"tool {name}")
            return
        self._append(event)

    def _aside(self, delta: WorldDelta, notes: list[str]) -> None:
        """Record changes that belong to no tool call, and notes about the capture."""
        for note in notes:
            self.warn(note)
        if delta:
            self.warn("the world changed outside any tool call", delta)


def _stream_complete(
    headers: list[tuple[str, str]], chunks: list[bytes], read_to_end: bool
) -> bool:
    """Whether a response body is whole: an LLM stream's end event, else the transport's word."""
    ended = stream_ended(headers, chunks)
    return read_to_end if ended is None else ended


def _shared(secrets: Secrets | Iterable[str], source: Playback | None) -> Secrets:
    """The secrets a recording scrubs: shared with the playback answering it, if any."""
    known = secrets if isinstance(secrets, Secrets) else Secrets(secrets)
    if source is None or source.secrets is known:
        return known
    source.secrets.update(known)
    return source.secrets


record = Recording
"""Record a trial: ``with record("x.cassette", world=conn, case_id="refund") as rec:``."""
