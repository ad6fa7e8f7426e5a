"""The project's defaults for the command line: ``[tool.agent-replay]`` or ``replay.toml``.

The nearest ``replay.toml`` (its top level) or ``pyproject.toml`` (its
``[tool.agent-replay]`` table), from the working folder up, gives defaults to
the options of every command that has them, by the option's name (``agent``,
``tools``, ``llm-url``, ``store``, ``isolation``, ``judge-url``, ``trials``...;
``-`` or ``_`` alike): what the command line gives wins. A repeatable option
takes a list; a relative path is the file's folder's. A key no command has is
a one-line error naming the file and the nearest option, as is a file that is
not TOML.
"""

from __future__ import annotations

import difflib
import sys
from collections.abc import Iterable
from pathlib import Path
from typing import Any

import click

from recorder import ConfigError

if sys.version_info >= (3, 11):
    import tomllib
else:  # the dependency Python 3.10 installs
    import tomli as tomllib

TABLE = ("tool", "agent-replay")
"""Where in ``pyproject.toml`` the defaults are."""


def project_file(start: Path) -> tuple[Path, dict[str, Any]] | None:
    """The nearest file with defaults from ``start`` up, and its table; None if none."""
    for folder in (start, *start.parents):
        own = folder / "replay.toml"
        if own.is_file():
            return own, _read(own)
        project = folder / "pyproject.toml"
        if project.is_file():
            table: Any = _read(project)
            for key in TABLE:
                table = table.get(key) if isinstance(table, dict) else None
            if table is not None:
                if not isinstance(table, dict):
                    raise ConfigError(f"{project}: [tool.agent-replay] is not a table")
                return project, table
    return None


def default_map(commands: Iterable[click.Command], start: Path) -> dict[str, dict[str, Any]]:
    """Each command's defaults (click's ``default_map``) from the project's file."""
    found = project_file(start)
    if found is None:
        return {}
    path, table = found
    options = {
        name: {p.name: p for p in command.params if isinstance(p, click.Option) and p.name}
        for command in commands
        if (name := command.name) is not None
    }
    known = {p for params in options.values() for p in params}
    given = {str(key).replace("-", "_"): value for key, value in table.items()}
    for key in given:
        if key not in known:
            near = difflib.get_close_matches(key, sorted(known), n=1)
            hint = f"; did you mean {near[0].replace('_', '-')!r}?" if near else ""
            raise ConfigError(f"{path}: {key.replace('_', '-')!r} is no option of replay{hint}")
    return {
        name: {k: _resolved(params[k], v, path.parent) for k, v in given.items() if k in params}
        for name, params in options.items()
    }


def _resolved(option: click.Option, value: Any, folder: Path) -> Any:
    """A path option's relative value taken from the file's folder, not the working one."""
    if not isinstance(option.type, click.Path):
        return value
    if isinstance(value, list):
        return [_resolved(option, v, folder) for v in value]
    return (
        str(folder / value) if isinstance(value, str) and not Path(value).is_absolute() else value
    )


def _read(path: Path) -> dict[str, Any]:
    try:
        with path.open("rb") as file:
            loaded: dict[str, Any] = tomllib.load(file)
            return loaded
    except (OSError, tomllib.TOMLDecodeError) as exc:
        raise ConfigError(f"{path}: not readable TOML ({exc})") from None
