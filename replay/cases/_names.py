r"""Names the harness makes file names of (case ids, run names): names, never paths.

A name is 1 to ``NAME_MAX_CHARS`` characters of ``NAME_CHARS``, starting with a letter,
a digit or ``_``, without ``..``: so no ``/`` or ``\\``, no NUL or control character,
no hidden or option-like file name. Every path made from one is also checked to stay
in its folder where it is written (``inside``), whatever made the name.
"""

from __future__ import annotations

import re
from pathlib import Path

from recorder import ConfigError

NAME_MAX_CHARS = 128
"""The longest name (a cassette's file name adds its trial index and suffixes to it)."""
NAME_CHARS = "letters A-Z a-z, digits 0-9 and . _ - : @ +"
"""What a name may hold, as messages say it."""
_NAME = re.compile(r"[A-Za-z0-9_][A-Za-z0-9._:@+-]*")
_SHOWN = 60
"""Characters of a refused name a message quotes (a refused name may be huge)."""


def name_problem(value: object) -> str | None:
    """Why ``value`` is not a name (one line, the value quoted escaped), or None if it is."""
    if not isinstance(value, str):
        return f"must be a string, not {type(value).__name__}"
    shown = repr(value[:_SHOWN]) + ("..." if len(value) > _SHOWN else "")
    if _NAME.fullmatch(value) and ".." not in value and len(value) <= NAME_MAX_CHARS:
        return None
    why = "is empty" if not value else f"{shown} is not a name"
    return (
        f"{why}: use 1 to {NAME_MAX_CHARS} {NAME_CHARS}, starting with a letter, digit "
        "or _, without .. (a name, not a path)"
    )


def check_name(value: str, field: str) -> str:
    """Return ``value`` if it is a name, else raise.

    Args:
        value: The case id or run name.
        field: What gives it, for the message (``case id``, ```name```, ``--id``).

    Raises:
        ConfigError: ``value`` is not a name (``name_problem`` says why, in one line).
    """
    problem = name_problem(value)
    if problem is not None:
        raise ConfigError(f"{field} {problem}")
    return value


def inside(folder: Path, path: Path, what: str) -> Path:
    """Return ``path`` if it resolves inside ``folder`` (symbolic links followed), else raise.

    Args:
        folder: The folder ``path`` must stay in.
        path: A path made from a name (``folder / f"{case_id}.yaml"``).
        what: What names it, for the message (``case id 'x'``).

    Raises:
        ConfigError: ``path`` leads out of ``folder``.
    """
    if not path.resolve().is_relative_to(folder.resolve()):
        raise ConfigError(f"{what} leads out of {folder} (to {path}): refused, nothing written")
    return path
