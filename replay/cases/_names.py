r"""Names the harness makes file names of (case ids, run names): names, never paths.

A name is what ``NAME_RULE`` says: printable characters (any script, spaces inside,
``<&"?#%`` too) but ``/`` and ``\``, not ``..``, at most ``NAME_MAX_BYTES``: so no
path, no NUL, control or format character, no hidden or option-like file name, no
name too long for a file. Every path made from one is also checked to stay in its
folder where it is written (``inside``), whatever made the name.
"""

from __future__ import annotations

from pathlib import Path

from recorder import ConfigError

NAME_MAX_BYTES = 128
"""The longest name, in bytes of UTF-8 (a cassette's file name adds its index and suffixes)."""
NAME_RULE = (
    f"printable characters but / and \\, at most {NAME_MAX_BYTES} bytes (UTF-8), not "
    "starting with . - or a space, not ending with a space, without .."
)
"""What a name may be, as messages and the README say it."""
_SHOWN = 60
"""Characters of a refused name a message quotes (a refused name may be huge)."""


def name_problem(value: object) -> str | None:
    """Why ``value`` is not a name (one line, the value quoted escaped), or None if it is."""
    if not isinstance(value, str):
        return f"must be a string, not {type(value).__name__}"
    if (
        value.isprintable()  # (no NUL, control or format character: U+202E included)
        and not ({"/", "\\"} & set(value))
        and ".." not in value
        and value[:1] not in ("", ".", "-", " ")
        and not value.endswith(" ")
        and len(value.encode("utf-8", "surrogatepass")) <= NAME_MAX_BYTES
    ):
        return None
    shown = repr(value[:_SHOWN]) + ("..." if len(value) > _SHOWN else "")
    why = "is empty" if not value else f"{shown} is not a name"
    return f"{why}: use {NAME_RULE} (a name, not a path)"


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
