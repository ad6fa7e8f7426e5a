"""Sandboxed trials do not see secrets: environment variables that look like them are hidden.

What looks like a secret is the recorder's one rule (``recorder.secret_named``): by
its name (``*_API_KEY``, ``STRIPE_SK``, ``SENTRY_DSN``...) or, for a URL, by a
password in it (``DATABASE_URL=postgres://u:pw@h/db``).
"""

from __future__ import annotations

import contextlib
import os
import threading
from collections.abc import Iterable, Iterator

from recorder import secret_named

_env_lock = threading.Lock()
_env_users = 0
_env_hidden: dict[str, str] = {}


@contextlib.contextmanager
def hidden_secrets(allow: Iterable[str] = ()) -> Iterator[None]:
    """Hide environment variables that look like secrets (``recorder.secret_named``) while inside.

    Process-wide and reference-counted: concurrent sandbox trials share one
    hiding, restored when the last one leaves. ``allow`` names stay visible;
    the first trial's list applies while others join (one run uses one list).
    """
    global _env_users
    allowed = set(allow)
    with _env_lock:
        if _env_users == 0:
            for name, value in list(os.environ.items()):
                if name not in allowed and secret_named(name, value):
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
