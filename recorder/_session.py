"""Which recording or playback a call belongs to, and the interceptors' lifetime.

Interceptors are patched in once, while at least one session is active, and
look up the session per call: the one in the current context (threads and
asyncio tasks started inside ``with record(...)`` see it), else the only
active session. With several sessions active and none in context, calls pass
through unrecorded.
"""

from __future__ import annotations

import threading
from contextlib import ExitStack
from contextvars import ContextVar, Token
from typing import TYPE_CHECKING, Any, Union

if TYPE_CHECKING:
    from ._playback import Playback
    from ._recording import Recording

Session = Union["Recording", "Playback"]

_current: ContextVar[Session | None] = ContextVar("agent_replay_session", default=None)
_lock = threading.Lock()
_active: list[Session] = []
_patches: ExitStack | None = None


def current_session() -> Session | None:
    """Return the session a call made here belongs to, if any."""
    session = _current.get()
    if session is not None:
        return session
    active = _active
    return active[0] if len(active) == 1 else None


def enter(session: Session) -> Token[Session | None]:
    """Make ``session`` active and current; patch interceptors in if it is the first."""
    global _patches
    with _lock:
        if not _active:
            stack = ExitStack()
            try:
                for patch in _all_patches():
                    stack.enter_context(patch)
            except BaseException:
                stack.close()
                raise
            _patches = stack
        _active.append(session)
    return _current.set(session)


def leave(session: Session, token: Token[Session | None]) -> None:
    """Undo ``enter``; the last session to leave removes the interceptors."""
    global _patches
    try:
        _current.reset(token)
    except ValueError:  # left from another context (e.g. a generator finalised elsewhere)
        _current.set(None)
    with _lock:
        if session in _active:
            _active.remove(session)
        if not _active and _patches is not None:
            _patches.close()
            _patches = None


def _all_patches() -> list[Any]:
    from ._http import httpx_patches
    from ._vcr import vcr_patches

    return [*httpx_patches(), *vcr_patches()]
