"""httpx/httpx2 interception at the transport seam, streaming-aware.

The transports' ``handle_request``/``handle_async_request`` are patched while a
session is active (see ``_session``). Recording passes every body chunk
through the moment it arrives (a tee) and writes the exchange when the body
ends; playback answers from the cassette with the recorded chunks. vcrpy's
own httpx stub reads a streamed body to the end before returning it and
replays it as one chunk, which is why httpx does not go through vcrpy.
"""

from __future__ import annotations

import functools
import importlib
from collections.abc import AsyncIterator, Callable, Iterator
from types import ModuleType
from typing import Any
from unittest import mock

from ._playback import Playback
from ._schema import HttpEvent, HttpRequest, HttpResponse
from ._session import current_session

Done = Callable[[list[bytes], BaseException | None, bool], None]

MODULES = ("httpx", "httpx2")


def httpx_patches() -> list[Any]:
    """Return the patches (context managers) for every httpx flavour installed."""
    patches = []
    for name in MODULES:
        try:
            mod = importlib.import_module(name)
        except ImportError:
            continue
        for cls in (mod.HTTPTransport, mod.MockTransport):
            patches.append(mock.patch.object(cls, "handle_request", _sync(mod, cls.handle_request)))
        for cls in (mod.AsyncHTTPTransport, mod.MockTransport):
            original = cls.handle_async_request
            patches.append(mock.patch.object(cls, "handle_async_request", _async(mod, original)))
    return patches


def _request(mod: ModuleType, request: Any, body: bytes) -> HttpRequest:
    enc = request.headers.encoding
    return HttpRequest(
        method=request.method,
        url=str(request.url),
        headers=[(k.decode(enc).lower(), v.decode(enc)) for k, v in request.headers.raw],
        body=body,
    )


def _items(headers: Any) -> list[tuple[str, str]]:
    """``headers.multi_items()``, its encoding looked up once rather than twice a header.

    Names lower-cased, then each decoded as httpx decodes them all (``headers.encoding``).
    """
    enc = headers.encoding
    return [(k.lower().decode(enc), v.decode(enc)) for k, v in headers.raw]


def _replayed(mod: ModuleType, recorded: HttpEvent, request: Any) -> Any:
    """Rebuild the recorded outcome: a response (its chunks, then its error if one cut it)."""
    error = _error(mod, recorded, request) if recorded.error is not None else None
    if recorded.response is None:
        raise error if error is not None else mod.TransportError("no response recorded")
    return mod.Response(
        recorded.response.status,
        headers=recorded.response.headers,
        stream=_classes(mod)[2](recorded.response.chunks, error),
        extensions={"http_version": b"HTTP/1.1"},
    )


def _local(mod: ModuleType, recorder: Any, req: HttpRequest, request: Any, via: str) -> Any:
    """The answer given here, not by the network: an injected fault, or a frozen LLM's."""
    hooks = recorder.hooks
    if hooks.interpose is not None:
        injected = hooks.interpose(req)
        if injected is not None:
            return _answer(mod, injected)
    if hooks.source is not None:  # a frozen LLM: answered from a cassette, recorded anew
        return _replayed(mod, hooks.source.respond(req, via=via), request)
    return None


def _answer(mod: ModuleType, response: HttpResponse) -> Any:
    """A response given in place of the network's (``Hooks.interpose``)."""
    return mod.Response(
        response.status,
        headers=response.headers,
        stream=_classes(mod)[2](response.chunks, None),
        extensions={"http_version": b"HTTP/1.1"},
    )


def _error(mod: ModuleType, recorded: HttpEvent, request: Any) -> Exception:
    assert recorded.error is not None
    name = recorded.error.type.rsplit(".", 1)[-1]
    cls = getattr(mod, name, None)
    if not (isinstance(cls, type) and issubclass(cls, mod.TransportError)):
        cls = mod.TransportError
    error: Exception = cls(recorded.error.message, request=request)
    return error


def _sync(mod: ModuleType, original: Callable[..., Any]) -> Callable[..., Any]:
    via = mod.__name__

    @functools.wraps(original)
    def handle_request(transport: Any, request: Any) -> Any:
        session = current_session()
        if session is None:
            return original(transport, request)
        ignored = session.ignored(str(request.url))
        if ignored is True:
            return original(transport, request)
        if ignored is not False:
            return _answer(mod, ignored)
        req = _request(mod, request, request.read())
        if isinstance(session, Playback):
            return _replayed(mod, session.respond(req, via=via), request)
        recorder = session
        t0 = recorder.now()
        try:
            recorder.check_host(req.url)
            response = _local(mod, recorder, req, request, via)
            if response is None:
                response = original(transport, request)
        except Exception as exc:
            recorder.record_http(via, req, t0, None, None, [], exc, False)
            raise
        ttfb = recorder.now() - t0
        head = (response.status_code, _items(response.headers))
        done: Done = functools.partial(recorder.record_http, via, req, t0, ttfb, head)
        if hasattr(response, "_content"):  # built with content= (MockTransport): already whole
            raw = b"".join(response.stream)  # as sent, before content-encoding is undone
            done([raw] if raw else [], None, True)
        else:
            chunks: list[bytes] = []
            tee = _classes(mod)[0]
            response.stream = tee(response.stream, recorder.track(done, chunks, head[1]), chunks)
        return response

    return handle_request


def _async(mod: ModuleType, original: Callable[..., Any]) -> Callable[..., Any]:
    via = mod.__name__

    @functools.wraps(original)
    async def handle_async_request(transport: Any, request: Any) -> Any:
        session = current_session()
        if session is None:
            return await original(transport, request)
        ignored = session.ignored(str(request.url))
        if ignored is True:
            return await original(transport, request)
        if ignored is not False:
            return _answer(mod, ignored)
        req = _request(mod, request, await request.aread())
        if isinstance(session, Playback):
            return _replayed(mod, session.respond(req, via=via), request)
        recorder = session
        t0 = recorder.now()
        try:
            recorder.check_host(req.url)
            response = _local(mod, recorder, req, request, via)
            if response is None:
                response = await original(transport, request)
        except Exception as exc:
            recorder.record_http(via, req, t0, None, None, [], exc, False)
            raise
        ttfb = recorder.now() - t0
        head = (response.status_code, _items(response.headers))
        done: Done = functools.partial(recorder.record_http, via, req, t0, ttfb, head)
        if hasattr(response, "_content"):  # built with content= (MockTransport): already whole
            raw = b"".join(response.stream)  # as sent, before content-encoding is undone
            done([raw] if raw else [], None, True)
        else:
            chunks: list[bytes] = []
            tee = _classes(mod)[1]
            response.stream = tee(response.stream, recorder.track(done, chunks, head[1]), chunks)
        return response

    return handle_async_request


@functools.cache
def _classes(mod: ModuleType) -> tuple[type, type, type]:
    """Build the tee and replay stream classes for one httpx flavour.

    The client asserts its response stream is that flavour's
    ``SyncByteStream``/``AsyncByteStream``, so the classes subclass them.
    """

    class SyncTee(mod.SyncByteStream):  # type: ignore[name-defined,misc]
        def __init__(self, inner: Any, done: Done, chunks: list[bytes]) -> None:
            self._inner, self._done, self._chunks = inner, done, chunks

        def __iter__(self) -> Iterator[bytes]:
            try:
                for chunk in self._inner:
                    self._chunks.append(chunk)
                    yield chunk
            except GeneratorExit:
                raise
            except BaseException as exc:
                self._done(self._chunks, exc, False)
                raise
            self._done(self._chunks, None, True)

        def close(self) -> None:
            try:
                self._inner.close()
            finally:
                self._done(self._chunks, None, False)  # a no-op if the body already ended

    class AsyncTee(mod.AsyncByteStream):  # type: ignore[name-defined,misc]
        def __init__(self, inner: Any, done: Done, chunks: list[bytes]) -> None:
            self._inner, self._done, self._chunks = inner, done, chunks

        async def __aiter__(self) -> AsyncIterator[bytes]:
            try:
                async for chunk in self._inner:
                    self._chunks.append(chunk)
                    yield chunk
            except GeneratorExit:
                raise
            except BaseException as exc:
                self._done(self._chunks, exc, False)
                raise
            self._done(self._chunks, None, True)

        async def aclose(self) -> None:
            try:
                await self._inner.aclose()
            finally:
                self._done(self._chunks, None, False)

    class Chunks(mod.SyncByteStream, mod.AsyncByteStream):  # type: ignore[name-defined,misc]
        def __init__(self, chunks: list[bytes], error: Exception | None) -> None:
            self._chunks, self._error = chunks, error

        def __iter__(self) -> Iterator[bytes]:
            yield from self._chunks
            if self._error is not None:
                raise self._error

        async def __aiter__(self) -> AsyncIterator[bytes]:
            for chunk in self._chunks:
                yield chunk
            if self._error is not None:
                raise self._error

    return SyncTee, AsyncTee, Chunks
