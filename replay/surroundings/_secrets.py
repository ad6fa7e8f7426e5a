"""Sandboxed trials do not see secrets: environment variables named like them are hidden."""

from __future__ import annotations

import contextlib
import os
import threading
from collections.abc import Iterable, Iterator

SECRET_WORDS = ("KEY", "TOKEN", "SECRET", "PASSWORD")
_env_lock = threading.Lock()
_env_users = 0
_env_hidden: dict[str, str] = {}


@contextlib.contextmanager
def hidden_secrets(allow: Iterable[str] = ()) -> Iterator[None]:
    """Hide environment variables named like secrets (*KEY*, *TOKEN*...) while inside.

    Process-wide and reference-counted: concurrent sandbox trials share one
    hiding, restored when the last one leaves. ``allow`` names stay visible;
    the first trial's list applies while others join (one run uses one list).
    """
    global _env_users
    allowed = set(allow)
    with _env_lock:
        if _env_users == 0:
            for name in list(os.environ):
                if name not in allowed and any(w in name.upper() for w in SECRET_WORDS):
                    _env_hidden[name] = os.environ.pop(name)
        _env_users += 1
    try:
        yield
    finally:
        with _env_lock:
            _env_users -= 1
            if _env_users == 0:
                os.environ.update(_env_hidden)
                _env_hidden.clear()
