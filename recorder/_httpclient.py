"""http.client and urllib3 responses chunk by chunk: the recording tee and the replayed response.

``_vcr`` hands over the connection vcrpy's stub holds; nothing here imports vcrpy.

Recording gives the agent the real response, its reading methods wrapped on the
instance, so each chunk reaches it as it arrives and is kept as it was read:

- an ``http.client`` response (http.client, httplib2, urllib.request): each
  outermost ``read``/``read1``/``readinto``/``readline`` call's bytes are a
  chunk (``readline`` of a chunked body calls ``read`` itself: not counted twice);
  the body ended when http.client let go of its socket file or read its length;
- a urllib3 response (requests, urllib3): the raw reads under urllib3's decoding,
  so a chunk is the body as sent (still content-encoded), one per ``_raw_read``
  and, for a chunked body read with ``read_chunked``/``stream``, one per HTTP
  chunk however small the pieces it is read in; the body ended at the zero-size
  chunk or when the socket file closed.

Playback builds a real ``http.client.HTTPResponse`` over an in-memory socket
that yields the head, then each recorded chunk as one read (one HTTP chunk when
the body was chunked), and for urllib3's connections wraps it in a real urllib3
response as urllib3's ``getresponse`` does: read sizes, ``read1``, lines, chunked
and content decoding, and the errors of a cut body are the libraries' own.
"""

from __future__ import annotations

import builtins
import http
import http.client
import io
import weakref
from collections.abc import Callable
from typing import Any

from ._schema import ErrorInfo

try:
    import urllib3
    from urllib3.util.response import is_fp_closed
except ImportError:  # pragma: no cover - vcrpy's http.client stubs work without it
    urllib3 = None  # type: ignore[assignment]

Done = Callable[[list[bytes], BaseException | None, bool], None]

_NO_BODY = frozenset({204, 304})


def head(response: Any) -> tuple[int, list[tuple[str, str]]]:
    """Status and headers (names lowercased, repeats and order kept) of a real response."""
    original = getattr(response, "_original_response", None) or response
    return response.status, [(k.lower(), v) for k, v in original.msg.items()]


def bodiless(response: Any) -> bool:
    """Whether the response can carry no body (HEAD, 204, 304, 1xx, length 0)."""
    original = getattr(response, "_original_response", None) or response
    return bool(original.length == 0 or original._method == "HEAD")


def tee(response: Any, chunks: list[bytes], done: Done) -> None:
    """Wrap a real response's reads so that each chunk is kept as it is read.

    The wrappers do not make a cycle (the response is freed when the agent drops it),
    and a close from its finalizer records nothing: the garbage collector may run
    it anywhere, the recording's own lock held (``track`` records such a body at the end).
    """
    body = _Body(chunks, done)
    if urllib3 is not None and isinstance(response, urllib3.response.BaseHTTPResponse):
        _tee_urllib3(response, body)
    else:
        _tee_httplib(response, body)


class _Body:
    """A body being recorded: its chunks so far, and its recording callback, called once."""

    __slots__ = ("_done", "chunks", "ended")

    def __init__(self, chunks: list[bytes], done: Done) -> None:
        self.chunks, self._done, self.ended = chunks, done, False

    def end(self, error: BaseException | None, complete: bool) -> None:
        if not self.ended:
            self.ended = True
            self._done(self.chunks, error, complete)

    def fail(self, exc: BaseException) -> None:
        if partial := _partial(exc):
            self.chunks.append(partial)
        self.end(exc, False)


def _closer(response: Any, body: _Body, before: Callable[[], None] | None) -> Any:
    ref = weakref.ref(response)
    real_close = type(response).close

    def close() -> None:
        response: Any = ref()
        if response is None:
            return
        if not getattr(response, "_finalizing", False):  # set by io's finalizer
            if before is not None:
                before()
            body.end(None, False)  # a no-op if the body already ended
        real_close(response)

    return close


def _tee_httplib(r: Any, body: _Body) -> None:
    # The wrappers are methods of a subclass, not closures on the instance: a bound
    # method holds its response while it runs (``urlopen(url).read()``: nobody else
    # does), and nothing on the instance points back at it (no cycle).
    r._replay_tee = _HttplibTee(body)
    cls = type(r)
    r.__class__ = _TEEING.get(cls) or _TEEING.setdefault(cls, _teeing(cls))


class _HttplibTee:
    """What a teed ``http.client`` response records into (its ``_replay_tee``)."""

    __slots__ = ("body", "busy")

    def __init__(self, body: _Body) -> None:
        self.body = body
        self.busy = False
        """Inside a wrapped read: a nested one (readline -> read) is not a chunk."""

    def read(self, response: Any, real: Any, into: bool, args: Any, kwargs: Any) -> Any:
        if self.busy:
            return real(response, *args, **kwargs)
        self.busy = True
        try:
            got = real(response, *args, **kwargs)
        except Exception as exc:
            self.body.fail(exc)
            raise
        finally:
            self.busy = False
        data = bytes(memoryview(args[0])[:got]) if into else got
        if data:
            self.body.chunks.append(data)
        if response.fp is None or response.length == 0:  # let go of the socket, or all read
            self.body.end(None, True)
        return got


_TEEING: dict[type, type] = {}
"""Each ``http.client`` response class, subclassed once by ``_teeing``."""


def _teeing(cls: Any) -> type:
    """``cls`` with its reads recording into the instance's ``_replay_tee`` (one per class)."""

    def wrap(name: str, into: bool = False) -> Callable[..., Any]:
        real = getattr(cls, name)

        def tee(self: Any, *args: Any, **kwargs: Any) -> Any:
            return self._replay_tee.read(self, real, into, args, kwargs)

        tee.__name__ = tee.__qualname__ = name
        return tee

    real_close = cls.close

    def close(self: Any) -> None:
        if not getattr(self, "_finalizing", False):  # set by io's finalizer
            self._replay_tee.body.end(None, False)  # a no-op if the body already ended
        real_close(self)

    methods = {name: wrap(name) for name in ("read", "read1", "readline")}
    methods |= {"readinto": wrap("readinto", into=True), "close": close}
    return type(cls.__name__, (cls,), {**methods, "__module__": cls.__module__})


def _tee_urllib3(u: Any, body: _Body) -> None:
    ref = weakref.ref(u)
    cls = type(u)
    raw_read, handle_chunk, chunk_length = (
        cls._raw_read,
        cls._handle_chunk,
        cls._update_chunk_length,
    )
    chunks = body.chunks
    pieces: list[bytes] = []  # of the HTTP chunk being read, when read in pieces

    def flush() -> None:
        if pieces:
            chunks.append(b"".join(pieces))
            pieces.clear()

    def failed(exc: BaseException) -> None:
        if partial := _partial(exc):
            pieces.append(partial)
        flush()
        body.end(exc, False)

    def _raw_read(*args: Any, **kwargs: Any) -> Any:
        response: Any = ref()
        try:
            data = raw_read(response, *args, **kwargs)
        except Exception as exc:
            failed(exc)
            raise
        if data:
            chunks.append(data)
        if response._fp is None or is_fp_closed(response._fp):
            body.end(None, True)
        return data

    def _handle_chunk(amt: int | None) -> Any:
        response: Any = ref()
        try:
            piece = handle_chunk(response, amt)
        except Exception as exc:
            failed(exc)
            raise
        if response.chunk_left is None and not pieces:  # a whole HTTP chunk in one read
            chunks.append(piece)
        else:
            pieces.append(piece)
            if response.chunk_left is None:
                flush()
        return piece

    def _update_chunk_length() -> None:
        response: Any = ref()
        try:
            chunk_length(response)
        except Exception as exc:
            failed(exc)
            raise
        if response.chunk_left == 0:  # the zero-size chunk: the body ended
            body.end(None, True)

    u._raw_read, u._handle_chunk, u._update_chunk_length = (
        _raw_read,
        _handle_chunk,
        _update_chunk_length,
    )
    u.close = _closer(u, body, flush)


def _partial(exc: BaseException | None) -> bytes:
    """What arrived of a body cut short, carried by the error (http.client's IncompleteRead)."""
    while exc is not None:
        partial = getattr(exc, "partial", None)
        if isinstance(partial, bytes):
            return partial
        exc = exc.__cause__ or exc.__context__
    return b""


# -- playback ---------------------------------------------------------------------


class _Wire(io.RawIOBase):
    """What the socket would have given: the head, then each recorded piece as one read."""

    def __init__(self, pieces: list[bytes], error: Exception | None) -> None:
        self._pieces, self._next, self._offset, self._error = pieces, 0, 0, error

    def readable(self) -> bool:
        return True

    def readinto(self, buffer: Any) -> int:
        if self._next == len(self._pieces):
            if self._error is not None:
                raise self._error
            return 0
        piece = self._pieces[self._next]
        n = min(len(buffer), len(piece) - self._offset)
        buffer[:n] = piece[self._offset : self._offset + n]
        self._offset += n
        if self._offset == len(piece):
            self._next, self._offset = self._next + 1, 0
        return n


class _Socket:
    """The socket a replayed response is read from."""

    def __init__(self, wire: _Wire) -> None:
        self._wire = wire

    def makefile(self, mode: str, *args: Any, **kwargs: Any) -> io.BufferedReader:
        return io.BufferedReader(self._wire)


_URLLIB3: dict[type, bool] = {}


def is_urllib3(connection: Any) -> bool:
    """Whether a real connection is urllib3's (its responses are urllib3's)."""
    cls = type(connection)
    found = _URLLIB3.get(cls)
    if found is None:
        # By the class's lineage, not isinstance: vcrpy replaces urllib3.connection's names.
        found = _URLLIB3[cls] = any(c.__module__ == "urllib3.connection" for c in cls.__mro__)
    return found


Recorded = tuple[int, list[tuple[str, str]], list[bytes], bool, "ErrorInfo | None"]
"""Status, headers, chunks, whether the body was whole, and the error that cut it."""


def replayed(
    connection: Any, method: str, url: str, recorded: Recorded, options: dict[str, Any]
) -> Any:
    """A real response reading the recorded chunks, one per read (see the module doc).

    ``connection`` is the real connection it answers for; ``options`` the keyword
    options of its ``request`` call (urllib3's ``preload_content``...).
    """
    status, headers, chunks, complete, error = recorded
    chunked = any(k.lower() == "transfer-encoding" and "chunked" in v.lower() for k, v in headers)
    bodiless = method == "HEAD" or status in _NO_BODY or 100 <= status < 200
    if not chunked and complete and not bodiless:  # redaction may have changed the length
        length = str(sum(len(c) for c in chunks))
        kept = [(k, v) for k, v in headers if k.lower() != "content-length"]
        headers = [*kept, ("content-length", length)]
    try:
        reason = http.HTTPStatus(status).phrase
    except ValueError:
        reason = ""
    lines = [f"HTTP/1.1 {status} {reason}\r\n", *(f"{k}: {v}\r\n" for k, v in headers), "\r\n"]
    text = "".join(lines)
    try:
        pieces = [text.encode("latin-1")]  # as http.client decodes them
    except UnicodeEncodeError:
        pieces = [text.encode()]
    if chunked:
        pieces += [b"%x\r\n%s\r\n" % (len(c), c) for c in chunks if c]
        if complete:
            pieces.append(b"0\r\n\r\n")
    else:
        pieces += [c for c in chunks if c]
    wire = _Wire(pieces, None if complete or error is None else _cut(error))
    response = http.client.HTTPResponse(_Socket(wire), method=method)  # type: ignore[arg-type]
    response.begin()
    if not is_urllib3(connection):
        return response
    return urllib3.response.HTTPResponse(  # as urllib3's HTTPConnection.getresponse builds it
        body=response,
        headers=urllib3.HTTPHeaderDict(response.msg.items()),
        status=response.status,
        version=response.version,
        version_string="HTTP/1.1",
        reason=response.reason,
        preload_content=options.get("preload_content", True),
        decode_content=options.get("decode_content", True),
        original_response=response,
        enforce_content_length=options.get("enforce_content_length", True),
        request_method=method,
        request_url=url,
    )


def _cut(error: ErrorInfo) -> Exception | None:
    """What the socket raises where the recorded body was cut by a socket error.

    None (the body just ends) for what a library raised on a short body
    (IncompleteRead, urllib3's ProtocolError): it raises that again itself.
    """
    name = error.type.rsplit(".", 1)[-1]
    cls = getattr(builtins, name, None)
    if isinstance(cls, type) and issubclass(cls, OSError):
        return cls(error.message)
    if "Timeout" in name:
        return TimeoutError(error.message)
    return None


def failure(error: ErrorInfo) -> Exception:
    """The recorded error of a request that got no response, to raise again.

    A socket error as it was; anything else (urllib3's, a sandbox refusal) as a
    ``ConnectionError``, which urllib3 and requests turn into their own.
    """
    return _cut(error) or ConnectionError(error.message)
