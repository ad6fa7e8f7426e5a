"""The one rule for what is named like a secret: headers, form fields, variables, settings.

Recording (headers, form fields), run specs (settings, MCP servers' variables and
options) and the environment hidden from in-process trials all ask ``secret_named``.
"""

from __future__ import annotations

import re
from functools import lru_cache

SECRET_WORDS = frozenset(
    {
        "KEY",
        "APIKEY",
        "TOKEN",
        "SECRET",
        "SECRETS",
        "PASSWORD",
        "PASSWD",
        "PWD",
        "PASSPHRASE",
        "CREDENTIAL",
        "CREDENTIALS",
        "CREDS",
        "AUTH",
        "AUTHORIZATION",
        "BEARER",
        "JWT",
        "COOKIE",
        "COOKIES",
        "SK",
        "DSN",
    }
)
"""A name holding one of these words is a secret's (``secret_named``)."""

SECRET_SUFFIXES = ("APIKEY", "TOKEN", "SECRET", "PASSWORD", "PASSWD")
"""A word ending in one of these is one too: ``GITHUBTOKEN``, ``CLIENTSECRET``."""

NOT_SECRET_WORDS = frozenset({"IDEMPOTENCY", "WEBSOCKET"})
"""A name holding one of these (in any case, words run together) is not: its "key"
is a fresh nonce, not a credential."""

_CAMEL = re.compile(r"([a-z0-9])([A-Z])")
_WORD = re.compile(r"[^A-Za-z0-9]+")
_URL_CREDENTIALS = re.compile(r"\s*[a-zA-Z][a-zA-Z0-9+.-]*://[^/?#@\s]*:[^/?#@\s]*@")


def secret_named(name: str, value: object = None) -> bool:
    """Whether a header, form field, variable, setting or option is a secret's.

    Its name holds one of ``SECRET_WORDS`` (words, split at ``_ - .``, spaces and
    camelCase; any case): ``KEY``, ``APIKEY``, ``TOKEN``, ``SECRET(S)``,
    ``PASSWORD``, ``PASSWD``, ``PWD``, ``PASSPHRASE``, ``CREDENTIAL(S)``, ``CREDS``,
    ``AUTH``, ``AUTHORIZATION``, ``BEARER``, ``JWT``, ``COOKIE(S)``, ``SK``
    (``STRIPE_SK``), ``DSN`` (``SENTRY_DSN``); or a word ending in ``APIKEY``,
    ``TOKEN``, ``SECRET``, ``PASSWORD`` or ``PASSWD`` (``GITHUBTOKEN``). Or,
    whatever its name, its ``value`` is a URL with a password in it
    (``DATABASE_URL=postgres://u:pw@h/db``, ``REDIS_URL=redis://:pw@h``).

    Decided, with the mistakes it would make otherwise:

    - Words, not substrings: ``max_tokens``, ``keyword``, ``TOKENIZERS_PARALLELISM``
      and ``x-ratelimit-remaining-tokens`` are not secrets (``TOKENS`` is not
      ``TOKEN``); ``api_key``, ``--auth-token``, ``githubToken``, ``x-goog-api-key``
      are. A word that only ends in ``KEY`` is not (``MONKEY``, ``HOTKEY``).
    - ``PWD`` alone is the shell's working folder, not a password: ``DB_PWD`` is
      a secret, ``PWD`` and ``OLDPWD`` are not.
    - ``PASS`` and ``SESSION`` are not words of secrets (``pass_k``,
      ``XDG_SESSION_TYPE``, ``DBUS_SESSION_BUS_ADDRESS``); a session's token or
      key is one by its other word, and a session cookie travels in ``Cookie``.
    - ``AUTH`` makes ``SSH_AUTH_SOCK`` a secret's: hidden from trials, it is the
      door to the SSH agent's keys.
    - A URL is a secret's by its value, not its name: a user with a password
      (``user:pw@``, ``:pw@``). A user alone (``ssh://git@host``) is not.
    - ``Idempotency-Key`` and ``Sec-WebSocket-Key`` (``NOT_SECRET_WORDS``) are
      fresh nonces on every request, not credentials.
    """
    by_name = _by_name(name)
    if by_name is not None:
        return by_name
    return isinstance(value, str) and credentials_in_url(value)


@lru_cache(maxsize=4096)
def _by_name(name: str) -> bool | None:
    """What the name alone decides, None if only a value can (cached: every request asks)."""
    if any(w in _WORD.sub("", name).upper() for w in NOT_SECRET_WORDS):
        return False
    words = {w.upper() for w in _WORD.split(_CAMEL.sub(r"\1_\2", name)) if w}
    if words & SECRET_WORDS and name.upper() != "PWD":
        return True
    if any(w.endswith(SECRET_SUFFIXES) for w in words):
        return True
    return None


def credentials_in_url(value: str) -> bool:
    """Whether ``value`` is a URL with a password in it (``scheme://user:pw@host``)."""
    return _URL_CREDENTIALS.match(value) is not None
