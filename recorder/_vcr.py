"""The vcrpy bridge: requests, urllib3 and http.client traffic (the only vcrpy import).

vcrpy's patchers talk to a cassette object; ours forwards to the active
session, so vcrpy's own matching (a scan of every recorded request) and YAML
persistence are never used. vcrpy's httpx and aiohttp patchers are skipped:
``_http`` and ``_aiohttp`` intercept those at their own seams.

Streaming. vcrpy's stub connection (``VCRConnection``) is kept: it captures the
request and holds the real connection, and what its classes handle (connection
pools and their reuse, HTTPS, proxies and CONNECT tunnels, deferred connects,
the requests/urllib3/httplib2/boto3 classes) would have to be rebuilt to
intercept at http.client's own seam. What its ``getresponse`` does with the
response is replaced (``_stubs.getresponse``): vcrpy read the body to the end
before returning it (first byte late: 2.01 s instead of 0.01 s for a stream of
2 s) and replayed it as one chunk. Ours sends the request as vcrpy did, with
the options vcrpy dropped (urllib3's ``preload_content``, ``decode_content``...),
and returns the real response itself, its reads teed (``_httpclient``): each
chunk reaches the agent as it arrives and is recorded as it was read (the body
as sent, content-encoding and all), the exchange when the body ends; no second,
stub response is built from a copy of it as vcrpy did. Playback returns a real
response reading the recorded chunks one by one.

vcrpy puts the real classes back, process-wide, around each real connect,
send and connection build (``vcr.patch.force_reset``): any other thread that
opened a connection in that window got a real one, never recorded (with 64
trials in threads, most of their traffic went unrecorded), and httpx's
transports lost ``_http``'s interceptors. Ours opens no window for connects
and sends (nothing in them needs one). Building a real connection needs one
only when a real constructor reaches a name vcrpy patched: for those found
in the code (``super(HTTPSConnection, self)`` in ``http.client``) a copy of
the method sees the real names (``_rebound``), no window; a constructor that
still fails under the stubs (one reaching a patched class another way:
httplib2, a wrapped ``__init__``) is built again in vcrpy's window, one
window at a time (``_guarded``), with vcrpy's exposure for that instant.
"""

from __future__ import annotations

import contextlib
import functools
import threading
import types
import zlib
from collections.abc import Callable, Iterator
from typing import Any
from unittest import mock

import vcr.patch
import vcr.stubs
from vcr.patch import CassettePatcherBuilder

from . import _stubs
from ._playback import Playback
from ._recording import Recording
from ._schema import HttpResponse
from ._session import current_session
from ._stubs import VIA


class _Bridge:
    """Quacks like the ``vcr.cassette.Cassette`` vcrpy's stubs call.

    ``VCRConnection`` (the http.client family) no longer calls it
    (``_stubs.getresponse`` does the work): vcrpy's stubs for other clients (tornado) do.
    """

    _path = "agent-replay"
    custom_patches: tuple[Any, ...] = ()
    skip_patchers = ("httpx", "httpx2", "aiohttp")

    def __init__(self) -> None:
        self._started: dict[int, float] = {}
        self._ignored: dict[int, HttpResponse | bool] = {}

    _request = staticmethod(_stubs.request_of)

    def can_play_response_for(self, vcr_request: Any) -> bool:
        session = current_session()
        if session is None:
            return False
        verdict = session.ignored(vcr_request.uri)
        if verdict is not False:  # kept for play_response, filter_request and append
            self._ignored[id(vcr_request)] = verdict
            return isinstance(verdict, HttpResponse)
        if isinstance(session, Playback):
            return True  # play_response answers or raises: a miss never reaches the network
        # Called by the stub just before it sends: the start of the exchange.
        self._started[id(vcr_request)] = session.now()
        session.check_host(vcr_request.uri)
        return session.hooks.source is not None  # a frozen LLM: answered by play_response

    @property
    def write_protected(self) -> bool:
        session = current_session()
        return isinstance(session, Playback)

    def filter_request(self, vcr_request: Any) -> Any:
        # A falsy answer lets a write-protected cassette (playback) send it: an ignored host.
        return None if self._ignored.get(id(vcr_request)) is True else vcr_request

    def play_response(self, vcr_request: Any) -> dict[str, Any]:
        local = self._ignored.pop(id(vcr_request), None)
        if isinstance(local, HttpResponse):  # an ignored host, answered here: not recorded
            return _vcr_response(local.status, local.headers, local.chunks)
        session = current_session()
        player = session.hooks.source if isinstance(session, Recording) else session
        assert isinstance(player, Playback)
        request = self._request(vcr_request)
        event = player.respond(request, via=VIA)
        if isinstance(session, Recording):
            t0 = self._started.pop(id(vcr_request), session.now())
            head = (event.response.status, event.response.headers) if event.response else None
            chunks = event.response.chunks if event.response else []
            session.record_http(VIA, request, t0, None, head, chunks, None, True)
        recorded = event.response
        if recorded is None:
            message = event.error.message if event.error else "no response recorded"
            raise ConnectionError(message)  # urllib3 turns it into its own connection error
        return _vcr_response(recorded.status, recorded.headers, recorded.chunks)

    def append(self, vcr_request: Any, response: dict[str, Any]) -> None:
        if self._ignored.pop(id(vcr_request), None) is not None:
            return  # an ignored host went out live: not recorded
        session = current_session()
        if not isinstance(session, Recording):
            return
        t0 = self._started.pop(id(vcr_request), session.now())
        by_name = response["headers"]  # a dict of lists; tornado's stub: (name, list) pairs
        pairs = by_name.items() if isinstance(by_name, dict) else by_name
        headers = [(k.lower(), v) for k, values in pairs for v in values]
        body = response["body"]["string"]
        if not _encoded_as_declared(headers, body):
            # The client decoded the body but the headers still name its encoding: record
            # what we hold, plain, so that neither replay nor redaction misreads it.
            drop = ("content-encoding", "content-length")
            headers = [(k, v) for k, v in headers if k.lower() not in drop]
        session.record_http(
            VIA,
            self._request(vcr_request),
            t0,
            None,
            (response["status"]["code"], headers),
            [body] if body else [],
            None,
            True,
        )


def _vcr_response(
    status: int, headers: list[tuple[str, str]], chunks: list[bytes]
) -> dict[str, Any]:
    by_name: dict[str, list[str]] = {}
    for name, value in headers:
        by_name.setdefault(name, []).append(value)
    return {
        "status": {"code": status, "message": ""},
        "headers": by_name,
        "body": {"string": b"".join(chunks)},
    }


def _encoded_as_declared(headers: list[tuple[str, str]], body: bytes) -> bool:
    encoding = next((v.lower() for k, v in headers if k.lower() == "content-encoding"), "")
    if encoding not in ("gzip", "deflate"):
        return True
    try:
        zlib.decompressobj(
            16 + zlib.MAX_WBITS if encoding == "gzip" else zlib.MAX_WBITS
        ).decompress(body[:64])
    except zlib.error:
        return False
    return True


_BRIDGE = _Bridge()


def vcr_patches() -> list[Any]:
    """Return vcrpy's patches for the http.client family, bound to the bridge."""
    # vcrpy >= 9 honours skip_patchers; older releases (the ones Python 3.10 gets)
    # build httpx patchers regardless, so drop any patch whose target is httpx's.
    patches = [
        patch
        for patch in CassettePatcherBuilder(_BRIDGE).build()
        if _target_module(patch) not in _SKIPPED
    ]
    stubs = {
        owner
        for patch in patches
        if isinstance(getattr(patch, "new", None), type)
        and issubclass(patch.new, vcr.stubs.VCRConnection)
        for owner in patch.new.__mro__
        if issubclass(owner, vcr.stubs.VCRConnection) and "__init__" in vars(owner)
    }
    guarded = [mock.patch.object(c, "__init__", _guarded(vars(c)["__init__"])) for c in stubs]
    connection = vcr.stubs.VCRConnection
    return [
        *patches,
        *_rebound(),
        *guarded,
        mock.patch.object(vcr.patch, "force_reset", _no_window),
        mock.patch.object(connection, "getresponse", _stubs.getresponse),
        mock.patch.object(connection, "request", _stubs.keep_options(connection.request)),
        mock.patch.object(connection, "putrequest", _stubs.drop_options(connection.putrequest)),
    ]


def _no_window() -> contextlib.AbstractContextManager[None]:
    return contextlib.nullcontext()


def _guarded(init: Callable[..., None]) -> Callable[..., None]:
    """A stub's ``__init__`` that rebuilds in vcrpy's window what failed to build without.

    For a real constructor that reaches a patched class in a way ``_rebound`` does
    not see (an attribute chain, a wrapper).
    """

    @functools.wraps(init)
    def guarded(self: Any, *args: Any, **kwargs: Any) -> None:
        try:
            init(self, *args, **kwargs)
        except Exception:
            with _real_classes():
                init(self, *args, **kwargs)

    return guarded


_window = threading.RLock()


@contextlib.contextmanager
def _real_classes() -> Iterator[None]:
    """The real classes back in place (httpx's left alone), one window at a time."""
    targets = _plans()[1]
    with _window:
        saved = [(target, name, getattr(target, name)) for target, name, _ in targets]
        try:
            for target, name, real in targets:
                setattr(target, name, real)
            yield
        finally:
            for target, name, value in saved:
                setattr(target, name, value)


_Rebind = tuple[type, str, types.FunctionType, dict[str, Any]]
_Reset = tuple[Any, str, Any]
_plan: tuple[list[_Rebind], list[_Reset]] | None = None


def _plans() -> tuple[list[_Rebind], list[_Reset]]:
    """What to rebind and what a window resets, found once per process."""
    global _plan
    if _plan is None:
        _plan = _rebinding()
    return _plan


def _rebound() -> list[Any]:
    """Patches giving the real classes' methods that use a name vcrpy patches the real value.

    Each gets a copy bound to its module's globals as they are now, with vcrpy's
    stubs swapped back for the real classes. A method replaced since it was found
    (someone wrapped it) is left as it is: ``_guarded`` covers it.
    """
    return [
        mock.patch.object(owner, name, _copy(function, {**function.__globals__, **names}))
        for owner, name, function, names in _plans()[0]
        if vars(owner).get(name) is function
    ]


def _rebinding() -> tuple[list[_Rebind], list[_Reset]]:
    """The methods to rebind, and (target, name, real value) for each class vcrpy patches."""
    real: dict[str, dict[str, Any]] = {}  # module -> name -> the real value vcrpy replaces
    classes = []
    resets = []
    for patch in vcr.patch.reset_patchers():
        target = patch.getter()
        if _target_module(patch) in _SKIPPED:
            continue
        resets.append((target, patch.attribute, patch.new))
        if isinstance(target, types.ModuleType):
            real.setdefault(target.__name__, {})[patch.attribute] = patch.new
        if isinstance(patch.new, type):
            classes.append(patch.new)
    plan: dict[tuple[type, str], tuple[types.FunctionType, dict[str, Any]]] = {}
    for cls in classes:
        for owner in cls.__mro__:
            for name, function in vars(owner).items():
                if not isinstance(function, types.FunctionType) or (owner, name) in plan:
                    continue
                shadowed = real.get(function.__globals__.get("__name__", ""), {})
                used = {n: shadowed[n] for n in _names(function.__code__) if n in shadowed}
                if used:
                    plan[owner, name] = (function, used)
    rebinds = [(owner, name, function, used) for (owner, name), (function, used) in plan.items()]
    return rebinds, resets


def _names(code: types.CodeType) -> set[str]:
    found = set(code.co_names)
    for const in code.co_consts:
        if isinstance(const, types.CodeType):
            found |= _names(const)
    return found


def _copy(function: types.FunctionType, globals_: dict[str, Any]) -> types.FunctionType:
    copy = types.FunctionType(
        function.__code__, globals_, function.__name__, function.__defaults__, function.__closure__
    )
    copy.__kwdefaults__ = function.__kwdefaults__
    copy.__qualname__ = function.__qualname__
    copy.__doc__ = function.__doc__
    copy.__annotations__ = function.__annotations__
    copy.__dict__.update(function.__dict__)
    return copy


def _target_module(patch: Any) -> str:
    getter = getattr(patch, "getter", None)  # mock patches; vcrpy's own patchers have none
    target = getter() if getter is not None else None
    return str(getattr(target, "__module__", "")).split(".")[0]


_SKIPPED = frozenset(_Bridge.skip_patchers)
