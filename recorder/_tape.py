"""The cassette side of a recording: events appended, and a stop, never a broken agent.

``Tape`` is ``Recording``'s base class. ``Recording`` decides what is recorded
(HTTP exchanges, tool calls, world deltas, the hooks of ``_hooks``); the tape
keeps it: it appends each event to the cassette, keeps room for the footer,
and when a write fails (a full disk, an I/O error, its file removed, a record
that cannot be encoded) stops, noting where and why (``Footer.stopped``), and
warns once or, when strict, raises ``RecordingFailed`` (README, "Recording
never breaks the agent").
"""

from __future__ import annotations

import errno
import logging
import threading
import traceback
from collections.abc import Callable
from pathlib import Path

from ._errors import CassetteError, RecordingFailed
from ._reader import Cassette
from ._redact import Redaction, Secrets
from ._schema import ErrorInfo, Event, Footer, Header, HttpEvent, Stopped, ToolEvent
from ._writer import CassetteWriter, NoRoom

_log = logging.getLogger("recorder")


def error_info(exc: BaseException, clean: Callable[[str], str] = str) -> ErrorInfo:
    """Describe an exception for a cassette, passing its texts through ``clean``.

    An exception that stands for a recorded one (offline replay raising a
    recorded tool error again) carries ``replayed = (type, message)`` and is
    described as that error, so a replay of a replay records what the first
    recording did. One that carries a program's ``stderr`` (text: an agent run
    as a program) has it after its traceback, where the cause is.
    """
    cls = type(exc)
    trace = "".join(traceback.format_exception(cls, exc, exc.__traceback__))
    stderr = getattr(exc, "stderr", None)
    if isinstance(stderr, str) and stderr.strip():
        trace += f"\nthe program's stderr (its last {len(stderr):,} characters):\n{stderr}"
    kind, message = f"{cls.__module__}.{cls.__qualname__}", str(exc)
    replayed = getattr(exc, "replayed", None)
    if isinstance(replayed, tuple) and len(replayed) == 2:
        kind, message = str(replayed[0]), str(replayed[1])
    return ErrorInfo(
        type=kind,
        message=clean(message),
        traceback=clean(trace) if trace else None,
    )


class Tape:
    """A cassette being written, from its header to its footer, that stops rather than fails.

    Opening it writes the header. A file that exists and may not be replaced
    raises ``CassetteError`` (a setting to change); any other failure to
    start stops the tape at once (no file is left when strict).
    """

    def __init__(
        self,
        path: Path,
        header: Header,
        *,
        overwrite: bool,
        strict: bool,
        redaction: Redaction,
        secrets: Secrets,
        clock: Callable[[], float],
    ) -> None:
        self.path = path
        self.redaction = redaction
        self.strict = strict
        """When set, a recording that cannot start or go on raises ``RecordingFailed``;
        otherwise it stops and the agent goes on (see ``Recording``'s docs)."""
        self._secrets = secrets
        self._clock = clock
        self._t0 = clock()
        self._header = header
        self._events: list[Event] = []
        self._lock = threading.Lock()
        self._closed = False
        self._closing = False
        self._stopped: Stopped | None = None
        self._failure: RecordingFailed | None = None
        self.cassette: Cassette | None = None
        """The cassette as written, once the recording is closed (no need to read it back);
        None when the recording could not start, or its file was removed."""
        self._writer: CassetteWriter | None = None
        try:
            self._writer = CassetteWriter(self.path, header, overwrite=overwrite)
        except CassetteError:
            raise  # the file exists and may not be replaced: a setting to change
        except Exception as exc:  # the recording cannot start: the agent runs unrecorded
            failure = self._stop(exc, "the header")
            if failure is not None:
                raise failure from exc
        else:
            self._keep_room()
            if self._failure is not None:  # strict, and no room at the start: no file left
                self._writer.close(None)
                self.path.unlink(missing_ok=True)
                raise self._failure

    @property
    def stopped(self) -> Stopped | None:
        """Where and why the recording stopped early, or None while it goes on (or went on)."""
        return self._stopped

    @property
    def events(self) -> tuple[Event, ...]:
        """The events recorded so far, in order (a snapshot)."""
        with self._lock:
            return tuple(self._events)

    def now(self) -> float:
        """Seconds since recording started."""
        return self._clock() - self._t0

    def _error(self, exc: BaseException) -> ErrorInfo:
        return error_info(exc, lambda text: self.redaction.redact_text(text, self._secrets))

    def _append(self, event: Event) -> None:
        failure: RecordingFailed | None = None
        with self._lock:
            if self._closed or self._writer is None or self._stopped is not None:
                return  # a response that ended after the block, or a recording stopped
            try:
                self._writer.write(event)
            except Exception as exc:  # a full disk, an I/O error, a value msgpack refuses
                failure = self._stop(exc, _described(event))
            else:
                self._events.append(event)
                failure = self._keep_room()
        if failure is not None and not self._closing:
            raise failure

    def _unrecordable(self, exc: Exception, what: str) -> None:
        """An event that cannot even be built (a value too deep...): stop as a write would."""
        with self._lock:
            if self._closed or self._stopped is not None:
                return
            failure = self._stop(exc, what)
        if failure is not None and not self._closing:
            raise failure

    def _keep_room(self) -> RecordingFailed | None:
        """Keep room for the footer past the cassette's end; stop when the disk has none."""
        if self._writer is None:
            return None
        try:
            self._writer.keep_room()
        except NoRoom as exc:
            return self._stop(exc, None)
        return None

    def _stop(self, exc: BaseException, lost: str | None) -> RecordingFailed | None:
        """Stop recording: note where and why, warn once; return the error to raise if strict.

        The writer stays open for the footer (which carries the note); what comes
        after is not recorded.
        """
        kind = "OSError" if isinstance(exc, NoRoom) else type(exc).__qualname__
        message = self.redaction.redact_text(str(exc), self._secrets)
        stopped = Stopped(
            t=self.now(),
            events=len(self._events),
            lost=lost,
            error=ErrorInfo(type=kind, message=message),
        )
        self._stopped = stopped
        if self.strict:  # raised instead of a warning
            self._failure = RecordingFailed(stopped.describe(), path=self.path)
            self._failure.__cause__ = exc
            return self._failure
        _log.warning("%s: %s; the agent's run goes on unrecorded", self.path, stopped.describe())
        return None

    def _end(self, footer: Footer) -> None:
        """Write the footer (with the note of a stop), close the file, keep the cassette."""
        if self._writer is not None and self._stopped is None and self._writer.removed():
            gone = FileNotFoundError(errno.ENOENT, "its file was removed while it was recorded")
            self._stop(gone, None)
        with self._lock:
            self._closed = True
            writer, self._writer = self._writer, None
            if writer is None:
                return  # it never started: nothing to close, no cassette
            if self._stopped is not None:  # never ok: the cassette is not the whole run
                footer = footer.model_copy(update={"stopped": self._stopped, "status": "error"})
            try:
                writer.close(footer)
            except Exception as exc:  # the file ends on its last complete event
                if self._stopped is None:
                    self._stop(exc, "the footer")
                assert self._stopped is not None
                note = self._stopped.describe()
                cut = f"recording was cut short: {len(self._events)} complete events ({note})"
                self.cassette = Cassette(self.path, self._header, list(self._events), None, cut)
                return
            if self._stopped is not None and self._stopped.error.type == "FileNotFoundError":
                return  # the cassette is gone: there is none to give
            self.cassette = Cassette(self.path, self._header, list(self._events), footer, None)


def _described(event: Event) -> str:
    """Name an event in a note: ``tool refund_order``, ``http POST URL``, ``warning``."""
    if isinstance(event, ToolEvent):
        return f"tool {event.name}"
    if isinstance(event, HttpEvent):
        return f"http {event.request.method} {event.request.url}"
    return f"a {event.kind} event"
