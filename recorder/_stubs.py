"""What vcrpy's stub connection does with a request and its response, streaming.

``_vcr`` patches ``VCRConnection.getresponse`` (and ``request``, to keep the
keyword options it drops) with these; they work on the stub's attributes
(``_vcr_request``, ``real_connection``...) and import no vcrpy. Why the stub is
kept and its response handling replaced: see ``_vcr``'s docstring.
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import Any

from . import _httpclient
from ._httpclient import Done
from ._playback import Playback
from ._recording import Recording
from ._schema import ErrorInfo, HttpEvent, HttpRequest, HttpResponse
from ._session import current_session

VIA = "vcrpy"
_OPTIONS = "_agent_replay_options"  # the request's keyword options, kept on the stub


def request_of(vcr_request: Any) -> HttpRequest:
    """The request vcrpy captured, as a cassette holds it."""
    # body_bytes, not body: vcrpy hands iterators and file objects over as they came.
    body = vcr_request.body_bytes or b""
    return HttpRequest(
        method=vcr_request.method,
        url=vcr_request.uri,
        headers=[(k.lower(), str(v)) for k, v in vcr_request.headers.items()],
        body=body.encode() if isinstance(body, str) else bytes(body),
    )


def getresponse(stub: Any, *args: Any, **kwargs: Any) -> Any:
    """``VCRConnection.getresponse``, streaming: the real response teed, or a replayed one."""
    vcr_request = stub._vcr_request
    session = current_session()
    verdict = session.ignored(vcr_request.uri) if session is not None else True
    if isinstance(verdict, HttpResponse):  # an ignored host, answered here: not recorded
        return _replay(stub, verdict.status, verdict.headers, verdict.chunks, True, None)
    if session is None or verdict:  # no session, or an ignored host: live, not recorded
        return _preload(stub, _send(stub))
    request = request_of(vcr_request)
    if isinstance(session, Playback):
        return _replayed(stub, session.respond(request, via=VIA))
    t0 = session.now()
    try:
        session.check_host(request.url)
        local = _local(session, request)
        response = _replayed(stub, local) if local is not None else _send(stub)
    except Exception as exc:
        session.record_http(VIA, request, t0, None, None, [], exc, False)
        raise
    ttfb = session.now() - t0
    if local is not None:  # a frozen LLM's or an injected answer: its body is known
        assert local.response is not None  # _replayed raised otherwise
        got = local.response
        error = _httpclient.failure(local.error) if local.error else None
        head = (got.status, got.headers)
        complete = got.complete and error is None
        session.record_http(VIA, request, t0, ttfb, head, got.chunks, error, complete)
        return response
    head = _httpclient.head(response)
    done: Done = functools.partial(session.record_http, VIA, request, t0, ttfb, head)
    if _httpclient.bodiless(response):
        done([], None, True)
    else:
        chunks: list[bytes] = []
        _httpclient.tee(response, chunks, session.track(done, chunks, head[1]))
    return _preload(stub, response)


def _local(recorder: Recording, request: HttpRequest) -> HttpEvent | None:
    """The answer given here, not by the network: an injected fault, or a frozen LLM's."""
    hooks = recorder.hooks
    if hooks.interpose is not None:
        injected = hooks.interpose(request)
        if injected is not None:
            return HttpEvent(t=0, duration=0, via=VIA, request=request, response=injected)
    if hooks.source is not None:  # a frozen LLM: answered from a cassette, recorded anew
        return hooks.source.respond(request, via=VIA)
    return None


def _send(stub: Any) -> Any:
    """Send the request for real, as vcrpy's stub did, and return the real response."""
    vcr_request = stub._vcr_request
    options = dict(stub.__dict__.get(_OPTIONS) or {})
    if _httpclient.is_urllib3(stub.real_connection):
        options["preload_content"] = False  # preloaded by _preload, through the tee
    if stub.__dict__.get("_deferred_connect"):
        connect_args, connect_kwargs = stub._deferred_connect
        stub._deferred_connect = None
        stub.real_connection.connect(*connect_args, **connect_kwargs)
    stub.real_connection.request(
        method=vcr_request.method,
        url=stub._url(vcr_request.uri),
        body=vcr_request.body_bytes,
        headers=vcr_request.headers,
        **options,
    )
    return stub.real_connection.getresponse()


def _preload(stub: Any, response: Any) -> Any:
    """Read the body now if the caller asked urllib3 to (``preload_content``, the default)."""
    options = stub.__dict__.get(_OPTIONS) or {}
    wanted = options.get("preload_content", True)
    if wanted and _httpclient.is_urllib3(stub.real_connection) and not response._body:
        # as urllib3's HTTPResponse.__init__ does
        response._body = response.read(decode_content=options.get("decode_content", True))
    return response


def _replayed(stub: Any, recorded: HttpEvent) -> Any:
    """The recorded outcome again: a response (its chunks, cut where it was), or its error."""
    got = recorded.response
    if got is None:
        if recorded.error is not None:
            raise _httpclient.failure(recorded.error)
        raise ConnectionError("no response recorded")
    return _replay(stub, got.status, got.headers, got.chunks, got.complete, recorded.error)


def _replay(
    stub: Any,
    status: int,
    headers: list[tuple[str, str]],
    chunks: list[bytes],
    complete: bool,
    error: ErrorInfo | None,
) -> Any:
    vcr_request = stub._vcr_request
    return _httpclient.replayed(
        stub.real_connection,
        vcr_request.method,
        stub._url(vcr_request.uri),
        (status, headers, chunks, complete, error),
        stub.__dict__.get(_OPTIONS) or {},
    )


def keep_options(request: Callable[..., None]) -> Callable[..., None]:
    """``VCRConnection.request``, keeping the keyword options it drops for ``_send``."""

    @functools.wraps(request)
    def keeping(
        self: Any, method: str, url: str, body: Any = None, headers: Any = None, **kwargs: Any
    ) -> None:
        request(self, method, url, body, headers)
        self.__dict__[_OPTIONS] = kwargs  # not setattr: the stub would copy it to the real one

    return keeping


def drop_options(putrequest: Callable[..., None]) -> Callable[..., None]:
    """``VCRConnection.putrequest``: a request built piece by piece has no options."""

    @functools.wraps(putrequest)
    def dropping(self: Any, *args: Any, **kwargs: Any) -> None:
        putrequest(self, *args, **kwargs)
        self.__dict__[_OPTIONS] = None

    return dropping
