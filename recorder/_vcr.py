"""The vcrpy bridge: requests, urllib3 and http.client traffic (the only vcrpy import).

vcrpy's patchers talk to a cassette object; ours forwards to the active
session, so vcrpy's own matching (a scan of every recorded request) and YAML
persistence are never used. vcrpy's httpx patchers are skipped: ``_http``
intercepts httpx streaming-aware. Through vcrpy a response body arrives
whole, as one chunk.

vcrpy puts the real classes back around each real connect and send
(``vcr.patch.force_reset``): a window in which any other thread that opens a
connection gets a real one, never recorded (with 64 trials in threads, most
of their traffic went unrecorded), and httpx's transports lose ``_http``'s
interceptors. The windows exist only because some real classes' methods look
their own patched names up at run time (``super(HTTPSConnection, self)`` in
``http.client``); we give exactly those methods the real names instead
(``_rebound``) and close the windows for good.
"""

from __future__ import annotations

import contextlib
import types
import zlib
from typing import Any
from unittest import mock

import vcr.patch
from vcr.patch import CassettePatcherBuilder

from ._playback import Playback
from ._recording import Recording
from ._schema import HttpRequest
from ._session import current_session


class _Bridge:
    """Quacks like the ``vcr.cassette.Cassette`` its stubs call."""

    _path = "agent-replay"
    custom_patches: tuple[Any, ...] = ()
    skip_patchers = ("httpx", "httpx2")

    def __init__(self) -> None:
        self._started: dict[int, float] = {}

    @staticmethod
    def _request(vcr_request: Any) -> HttpRequest:
        # body_bytes, not body: vcrpy hands iterators and file objects over as they came.
        body = vcr_request.body_bytes or b""
        return HttpRequest(
            method=vcr_request.method,
            url=vcr_request.uri,
            headers=[(k.lower(), str(v)) for k, v in vcr_request.headers.items()],
            body=body.encode() if isinstance(body, str) else bytes(body),
        )

    def can_play_response_for(self, vcr_request: Any) -> bool:
        session = current_session()
        if session is None:
            return False
        if isinstance(session, Playback):
            return True  # play_response answers or raises: a miss never reaches the network
        # Called by the stub just before it sends: the start of the exchange.
        self._started[id(vcr_request)] = session.now()
        session.check_host(vcr_request.uri)
        return session.source is not None  # a frozen LLM: answered by play_response

    @property
    def write_protected(self) -> bool:
        session = current_session()
        return isinstance(session, Playback)

    def filter_request(self, vcr_request: Any) -> Any:
        return vcr_request

    def play_response(self, vcr_request: Any) -> dict[str, Any]:
        session = current_session()
        player = session.source if isinstance(session, Recording) else session
        assert isinstance(player, Playback)
        request = self._request(vcr_request)
        event = player.respond(request, via="vcrpy")
        if isinstance(session, Recording):
            t0 = self._started.pop(id(vcr_request), session.now())
            head = (event.response.status, event.response.headers) if event.response else None
            chunks = event.response.chunks if event.response else []
            session.record_http("vcrpy", request, t0, None, head, chunks, None, True)
        recorded = event.response
        if recorded is None:
            message = event.error.message if event.error else "no response recorded"
            raise ConnectionError(message)  # urllib3 turns it into its own connection error
        headers: dict[str, list[str]] = {}
        for name, value in recorded.headers:
            headers.setdefault(name, []).append(value)
        return {
            "status": {"code": recorded.status, "message": ""},
            "headers": headers,
            "body": {"string": b"".join(recorded.chunks)},
        }

    def append(self, vcr_request: Any, response: dict[str, Any]) -> None:
        session = current_session()
        if not isinstance(session, Recording):
            return
        t0 = self._started.pop(id(vcr_request), session.now())
        headers = [(k, v) for k, values in response["headers"].items() for v in values]
        body = response["body"]["string"]
        if not _encoded_as_declared(headers, body):
            # urllib3 decoded the body but the headers still name its encoding: record what
            # we hold, plain, so that neither replay nor redaction misreads it.
            drop = ("content-encoding", "content-length")
            headers = [(k, v) for k, v in headers if k.lower() not in drop]
        session.record_http(
            "vcrpy",
            self._request(vcr_request),
            t0,
            None,
            (response["status"]["code"], headers),
            [body] if body else [],
            None,
            True,
        )


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
    return [*patches, *_rebound(), mock.patch.object(vcr.patch, "force_reset", _no_window)]


def _no_window() -> contextlib.AbstractContextManager[None]:
    return contextlib.nullcontext()


_plan: list[tuple[type, str, types.FunctionType, dict[str, Any]]] | None = None


def _rebound() -> list[Any]:
    """Patches giving the real classes' methods that use a name vcrpy patches the real value.

    Each gets a copy bound to its module's globals as they are now, with vcrpy's
    stubs swapped back for the real classes. Which methods: found once per process.
    """
    global _plan
    if _plan is None:
        _plan = _rebinding()
    return [
        mock.patch.object(owner, name, _copy(function, {**function.__globals__, **names}))
        for owner, name, function, names in _plan
    ]


def _rebinding() -> list[tuple[type, str, types.FunctionType, dict[str, Any]]]:
    """(class, name, method, {name: real value}) for each method to rebind."""
    real: dict[str, dict[str, Any]] = {}  # module -> name -> the real value vcrpy replaces
    classes = []
    for patch in vcr.patch.reset_patchers():
        target = patch.getter()
        if _target_module(patch) in _SKIPPED:
            continue
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
    return [(owner, name, function, used) for (owner, name), (function, used) in plan.items()]


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
    copy.__dict__.update(function.__dict__)
    return copy


def _target_module(patch: Any) -> str:
    getter = getattr(patch, "getter", None)  # mock patches; vcrpy's own patchers have none
    target = getter() if getter is not None else None
    return str(getattr(target, "__module__", "")).split(".")[0]


_SKIPPED = frozenset(_Bridge.skip_patchers)
