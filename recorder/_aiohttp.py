"""aiohttp interception at its own seam, streaming-aware (the only aiohttp import).

While a session is active (see ``_session``), ``ClientSession._request`` adds one
client middleware after the session's own, the innermost: it sees each request
as it goes out (final method, URL with its query, headers, body as bytes), each
hop of a redirect and each retry of a user's middleware, and answers it or lets
it through. Recording tees the response's content stream where aiohttp feeds it:
each chunk is recorded as it arrived and reaches the agent at once, whatever way
it reads (``read()``, ``iter_chunked``, lines); the exchange is written when the
body ends. Playback answers with a real ``ClientResponse`` whose stream gives the
recorded chunks one at a time, and never opens a connection. vcrpy's aiohttp
stub read a body whole and failed on ``json=`` bodies, which is why aiohttp does
not go through vcrpy. Needs aiohttp >= 3.12 (client middlewares).

aiohttp undoes a content-encoding as it feeds the stream: a body it decoded is
recorded decoded, without ``content-encoding`` and ``content-length``.
"""

from __future__ import annotations

import builtins
import collections
import functools
import http
import inspect
from collections.abc import Awaitable, Callable, Iterable
from typing import Any, cast
from unittest import mock

import aiohttp
from aiohttp import client_reqrep, hdrs
from aiohttp.helpers import TimerNoop
from aiohttp.streams import EmptyStreamReader, StreamReader
from multidict import CIMultiDict, CIMultiDictProxy

from ._errors import ConfigError
from ._playback import Playback
from ._recording import Recording
from ._schema import ErrorInfo, HttpEvent, HttpRequest, HttpResponse
from ._session import current_session

VIA = "aiohttp"
Done = Callable[[list[bytes], BaseException | None, bool], None]
Handler = Callable[[aiohttp.ClientRequest], Awaitable[aiohttp.ClientResponse]]

# What ClientResponse.release() sets on a body it leaves unread: not a network error.
_RELEASED = getattr(client_reqrep, "_CONNECTION_CLOSED_EXCEPTION", None)


def aiohttp_patches() -> list[Any]:
    """Return the patch (a context manager) of ``ClientSession._request``."""
    original = aiohttp.ClientSession._request
    return [mock.patch.object(aiohttp.ClientSession, "_request", _patched(original))]


def _patched(original: Callable[..., Awaitable[aiohttp.ClientResponse]]) -> Any:
    supported = "middlewares" in inspect.signature(original).parameters

    @functools.wraps(original)
    async def _request(
        self: aiohttp.ClientSession, method: str, str_or_url: Any, **kwargs: Any
    ) -> aiohttp.ClientResponse:
        if current_session() is None:
            return await original(self, method, str_or_url, **kwargs)
        if not supported:
            raise ConfigError(
                f"aiohttp {aiohttp.__version__} has no client middlewares, which agent-replay "
                "records aiohttp through: install aiohttp>=3.12"
            )
        chain = kwargs.get("middlewares")
        if chain is None:
            chain = self._middlewares
        kwargs["middlewares"] = (*chain, _intercept)
        return await original(self, method, str_or_url, **kwargs)

    return _request


async def _intercept(req: aiohttp.ClientRequest, handler: Handler) -> aiohttp.ClientResponse:
    """The middleware: record, answer from a cassette, or let the request through."""
    session = current_session()
    if session is None:
        return await handler(req)
    url = str(req.url)
    verdict = session.ignored(url)
    if isinstance(verdict, HttpResponse):  # an ignored host answered here, not recorded
        return _response(req, verdict.status, verdict.headers, verdict.chunks, None)
    if verdict:  # an ignored host: live, not recorded
        return await handler(req)
    request = HttpRequest(
        method=req.method,
        url=url,
        headers=[(k.lower(), v) for k, v in req.headers.items()],
        body=await _body(req),
    )
    if isinstance(session, Playback):
        return _replayed(req, session.respond(request, via=VIA))
    if hdrs.UPGRADE in req.headers:  # a websocket: its frames are not HTTP exchanges
        return await handler(req)
    return await _record(session, req, request, handler)


async def _record(
    recorder: Recording, req: aiohttp.ClientRequest, request: HttpRequest, handler: Handler
) -> aiohttp.ClientResponse:
    t0 = recorder.now()
    try:
        recorder.check_host(request.url)
        local = _local(recorder, req, request)
        response = local[0] if local is not None else await handler(req)
    except Exception as exc:
        recorder.record_http(VIA, request, t0, None, None, [], exc, False)
        raise
    ttfb = recorder.now() - t0
    if local is not None:  # the body is known already: recorded whole
        _, answer, error = local
        head = (answer.status, answer.headers)
        complete = answer.complete and error is None
        recorder.record_http(VIA, request, t0, ttfb, head, answer.chunks, error, complete)
    else:
        _tee(recorder, request, t0, ttfb, response)
    return response


def _local(
    recorder: Recording, req: aiohttp.ClientRequest, request: HttpRequest
) -> tuple[aiohttp.ClientResponse, HttpResponse, Exception | None] | None:
    """The answer given here, not by the network: an injected fault, or a frozen LLM's."""
    hooks = recorder.hooks
    if hooks.interpose is not None:
        injected = hooks.interpose(request)
        if injected is not None:
            resp = _response(req, injected.status, injected.headers, injected.chunks, None)
            return resp, injected, None
    if hooks.source is not None:  # a frozen LLM: answered from a cassette, recorded anew
        answer, error = _outcome(req, hooks.source.respond(request, via=VIA))
        resp = _response(req, answer.status, answer.headers, answer.chunks, error)
        return resp, answer, error
    return None


async def _body(req: aiohttp.ClientRequest) -> bytes:
    """The request body as bytes; a one-shot body (async generator) is kept for the send."""
    payload = req.body
    if isinstance(payload, (bytes, bytearray)):
        return bytes(payload)
    return await payload.as_bytes()  # AsyncIterablePayload caches what it read and sends that


# -- recording: the tee ---------------------------------------------------------


class _TeeBuffer(collections.deque):  # type: ignore[type-arg]
    """A stream's buffer that keeps every chunk aiohttp feeds into it, as it comes."""

    def __init__(self, buffered: Iterable[bytes], chunks: list[bytes], done: Done) -> None:
        super().__init__(buffered)
        self.chunks, self.done = chunks, done

    def append(self, data: bytes) -> None:
        self.chunks.append(data)
        super().append(data)


class _TeeReader(StreamReader):
    """A response's own ``StreamReader`` (class swapped in place) that reports its end.

    Same layout (no slots of its own): its state lives in its ``_TeeBuffer``.
    """

    __slots__ = ()

    def feed_eof(self) -> None:
        super().feed_eof()
        buffer = cast(_TeeBuffer, self._buffer)
        buffer.done(buffer.chunks, None, True)

    def set_exception(self, exc: BaseException, *args: Any) -> None:
        super().set_exception(exc, *args)
        buffer = cast(_TeeBuffer, self._buffer)
        # A no-op once the body has ended (release() sets one after every body).
        buffer.done(buffer.chunks, None if exc is _RELEASED else exc, False)


def _tee(
    recorder: Recording,
    request: HttpRequest,
    t0: float,
    ttfb: float,
    response: aiohttp.ClientResponse,
) -> None:
    content = response.content
    headers = [(k.lower(), v) for k, v in response.headers.items()]
    if getattr(content, "total_compressed_bytes", None) is not None:  # aiohttp decodes it
        drop = ("content-encoding", "content-length")
        headers = [(k, v) for k, v in headers if k not in drop]
    done: Done = functools.partial(
        recorder.record_http, VIA, request, t0, ttfb, (response.status, headers)
    )
    if type(content) is not StreamReader:  # EMPTY_PAYLOAD (HEAD, 204, 304), or unknown
        done([], None, isinstance(content, EmptyStreamReader))
        return
    chunks = list(content._buffer)  # what came with the headers; nothing is read yet
    if content.exception() is not None or content.is_eof():
        error = content.exception()
        done(chunks, error, error is None)
        return
    content._buffer = _TeeBuffer(content._buffer, chunks, recorder.track(done, chunks, headers))
    content.__class__ = _TeeReader


# -- playback: a response from recorded chunks ----------------------------------


class _NoFlow:
    """The protocol a replayed stream pauses and resumes: there is no socket."""

    def pause_reading(self) -> None:
        """Nothing to pause."""

    def resume_reading(self, resume_parser: bool = True) -> None:
        """Nothing to resume."""


class _Replayed(StreamReader):
    """A stream fed the recorded chunks one at a time, as a reader asks for data."""

    __slots__ = ("_error", "_pending")

    def __init__(
        self, chunks: list[bytes], error: Exception | None, chunked: bool, loop: Any
    ) -> None:
        super().__init__(cast(Any, _NoFlow()), 2**16, timer=TimerNoop(), loop=loop)
        self._pending = collections.deque(chunks)
        self._error = error
        if chunked:  # readchunk() then ends each chunk as an HTTP chunk, as live
            self.begin_http_chunk_receiving()
        if not chunks and error is None:
            self.feed_eof()

    async def _wait(self, func_name: str) -> None:
        if self._pending:
            self.feed_data(self._pending.popleft())
            if self._http_chunk_splits is not None:
                self.end_http_chunk_receiving()
        elif self._error is not None:
            self.set_exception(self._error)
            raise self._error
        else:
            if self._http_chunk_splits is not None:  # the last, empty chunk, as the parser
                self.end_http_chunk_receiving()
            self.feed_eof()


def _response(
    req: aiohttp.ClientRequest,
    status: int,
    headers: list[tuple[str, str]],
    chunks: list[bytes],
    error: Exception | None,
) -> aiohttp.ClientResponse:
    """Build the response ``ClientResponse.start`` would have, without a connection."""
    resp = req.response_class(
        req.method,
        req.original_url,
        writer=None,
        continue100=None,
        timer=req._timer,
        request_info=req.request_info,
        traces=req._traces,
        loop=req.loop,
        session=req.session,
        stream_writer=cast(Any, _Sent()),
    )
    multi: CIMultiDict[str] = CIMultiDict(headers)
    chunked = "chunked" in multi.get(hdrs.TRANSFER_ENCODING, "").lower()
    resp._closed = False
    resp.version = aiohttp.HttpVersion11
    resp.status = status
    try:
        resp.reason = http.HTTPStatus(status).phrase
    except ValueError:
        resp.reason = ""
    resp._headers = CIMultiDictProxy(multi)
    resp._raw_headers = tuple((k.encode(), v.encode()) for k, v in headers)
    resp.content = _Replayed(list(chunks), error, chunked, req.loop)
    resp.content.on_eof(resp._response_eof)
    if cookies := multi.getall(hdrs.SET_COOKIE, ()):
        resp._raw_cookie_headers = tuple(cookies)
    return resp


class _Sent:
    """The request writer a replayed response reports: nothing went out."""

    output_size = 0


def _replayed(req: aiohttp.ClientRequest, recorded: HttpEvent) -> aiohttp.ClientResponse:
    """Rebuild the recorded outcome: a response (its chunks, then its error if one cut it)."""
    response, error = _outcome(req, recorded)
    return _response(req, response.status, response.headers, response.chunks, error)


def _outcome(
    req: aiohttp.ClientRequest, recorded: HttpEvent
) -> tuple[HttpResponse, Exception | None]:
    """The recorded response and the error that cut it; raises the error if none came."""
    response = recorded.response
    if response is None:
        if recorded.error is not None:
            raise _error(recorded.error, req, False)
        raise aiohttp.ClientConnectionError("no response recorded")
    error = _error(recorded.error, req, bool(response.chunks)) if recorded.error else None
    return response, error


def _error(info: ErrorInfo, req: aiohttp.ClientRequest, in_body: bool) -> Exception:
    """The recorded exception again: its aiohttp (or OS) class where one can be built."""
    name = info.type.rsplit(".", 1)[-1]
    cls = getattr(aiohttp, name, None) or getattr(builtins, name, None)
    if isinstance(cls, type):
        if issubclass(cls, aiohttp.ClientConnectorError):  # "Cannot connect to ... [why]"
            why = info.message.rpartition(" [")[2].removesuffix("]")
            return cls(req.connection_key, OSError(None, why))
        if issubclass(cls, aiohttp.ClientResponseError):
            return cls(req.request_info, (), message=info.message)
        if issubclass(cls, (aiohttp.ClientError, OSError)):
            try:
                error: Exception = cls(info.message)
            except TypeError:
                pass
            else:
                return error
    if in_body:
        return aiohttp.ClientPayloadError(info.message)
    return aiohttp.ClientConnectionError(info.message)
