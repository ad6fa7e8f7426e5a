"""Which recording or playback a call belongs to, and the interceptors' lifetime.

Interceptors are patched in once, while at least one session is active, and
look up the session per call: the one in the current context (threads and
asyncio tasks started inside ``with record(...)`` see it), else the only
active session. Threads do not inherit the context: with several sessions
active, a call from a thread outside any context passes through unrecorded
(or, if one of them is a playback, is refused).

This module sits below what it serves: the interceptors and the sessions import
it, and it imports them only for types. Which patches to install it learns from
``add_interceptor``, called by ``_interceptors`` (imported by the package).
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterable, Iterator
from contextlib import AbstractContextManager, ExitStack, contextmanager
from contextvars import ContextVar, Token
from typing import TYPE_CHECKING, Any, Union

from ._errors import FixtureUnsupported, RecordingClosed

if TYPE_CHECKING:
    from ._playback import Playback
    from ._recording import Recording

Session = Union["Recording", "Playback"]

_current: ContextVar[Session | None] = ContextVar("agent_replay_session", default=None)
_outside: ContextVar[bool] = ContextVar("agent_replay_outside", default=False)
_lock = threading.Lock()
_active: list[Session] = []
_patches: ExitStack | None = None
_holds = 0
_interceptors: list[Callable[[], Iterable[AbstractContextManager[Any]]]] = []


def add_interceptor(patches: Callable[[], Iterable[AbstractContextManager[Any]]]) -> None:
    """Enter the patches ``patches()`` returns whenever the interceptors are patched in.

    ``patches`` is called on each install (the first session to start, or
    ``patched()``), not now, so it may import its client library then:
    ``import recorder`` loads no HTTP client.
    """
    _interceptors.append(patches)


def current_session() -> Session | None:
    """Return the session a call made here belongs to, if any.

    Raises:
        FixtureUnsupported: Several sessions are active, none in this context,
            and one of them is a playback: the call must not reach the network.
        RecordingClosed: This context's recording has closed and refuses late
            calls (``Hooks.refuse_late``).
    """
    if _outside.get():
        return None
    session = _current.get()
    active = _active
    if session is not None:
        if session in active:
            return session
        hooks = getattr(session, "hooks", None)  # a recording's; a playback has none
        if hooks is not None and hooks.refuse_late:  # a thread or task the trial left running
            raise RecordingClosed(path=getattr(session, "path", ""))
    if len(active) == 1:
        return active[0]
    if any(s.playback for s in active):
        raise FixtureUnsupported(
            request="a call from a thread outside any session's context",
            nearest="run the thread in the session's context (contextvars.copy_context().run)",
        )
    return None


@contextmanager
def unrecorded() -> Iterator[None]:
    """Calls made inside go out as they are: no session records or answers them.

    For a harness's own traffic during a trial (e.g. a simulated user's LLM),
    which is recorded on a channel of its own.
    """
    token = _outside.set(True)
    try:
        yield
    finally:
        _outside.reset(token)


def _install() -> None:
    global _patches
    if _patches is None:
        if not _interceptors:  # a session that intercepts nothing would record nothing
            raise RuntimeError("no interceptors registered: import recorder, not recorder._session")
        stack = ExitStack()
        try:
            for patches in _interceptors:
                for patch in patches():
                    stack.enter_context(patch)
        except BaseException:
            stack.close()
            raise
        _patches = stack


def _uninstall() -> None:
    global _patches
    if not _active and not _holds and _patches is not None:
        _patches.close()
        _patches = None


@contextmanager
def patched() -> Iterator[None]:
    """Keep the interceptors in place across the recordings made inside.

    Each recording otherwise patches them in when it starts and out when it
    ends (the last one active does): a trial runner making thousands of
    recordings pays that once instead. With no recording active, the
    patched calls go through untouched.
    """
    global _holds
    with _lock:
        _install()
        _holds += 1
    try:
        yield
    finally:
        with _lock:
            _holds -= 1
            _uninstall()


def enter(session: Session) -> Token[Session | None]:
    """Make ``session`` active and current; patch interceptors in if it is the first."""
    with _lock:
        _install()
        _active.append(session)
    return _current.set(session)


def leave(session: Session, token: Token[Session | None]) -> None:
    """Undo ``enter``; the last session to leave removes the interceptors (unless held)."""
    try:
        _current.reset(token)
    except ValueError:  # left from another context (e.g. a generator finalised elsewhere)
        _current.set(None)
    # Sessions left out of order may leave an inactive one current: current_session
    # ignores sessions that are no longer active.
    with _lock:
        if session in _active:
            _active.remove(session)
        _uninstall()
