"""The project's defaults for the command line: ``[tool.agent-replay]`` or ``replay.toml``.

The nearest ``replay.toml`` (its top level) or ``pyproject.toml`` (its
``[tool.agent-replay]`` table), from the working folder up, gives defaults to
``replay run``'s options by their long names (``agent``, ``tools``, ``llm-url``,
``store``, ``isolation``, ``judge-url``, ``trials``...; ``-`` or ``_`` alike),
and ``store`` to every command that has it: what the command line gives wins.
A repeatable option takes a list; a relative path is the file's folder's. A key
that is no option of ``replay run`` is a one-line error naming the file and the
nearest option, as is a file that is not TOML (a ``pyproject.toml`` only if it
names our table: another tool's broken file is not ours to judge).
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
            try:
                table: Any = _read(project)
            except ConfigError:
                if "agent-replay]" in project.read_text(errors="replace"):
                    raise  # ours, broken: said; another tool's broken file: not ours to judge
                continue
            for key in TABLE:
                table = table.get(key) if isinstance(table, dict) else None
            if table is not None:
                if not isinstance(table, dict):
                    raise ConfigError(f"{project}: [tool.agent-replay] is not a table")
                return project, table
    return None


def default_map(commands: Iterable[click.Command], start: Path) -> dict[str, dict[str, Any]]:
    """Each command's defaults (click's ``default_map``) from the project's file.

    The keys are ``replay run``'s options by their long names (``llm-url``, ``run``,
    ``ignore-field``...); they are ``run``'s defaults, and ``store`` every command's
    that has one (elsewhere a same-named option may mean another thing: ``runs
    --mode`` filters, ``regrade --judge-url`` judges again).
    """
    found = project_file(start)
    if found is None:
        return {}
    path, table = found
    by_command = {c.name: c for c in commands if c.name is not None}
    run = by_command.get("run")
    names = _long_names(run) if run is not None else {}
    given: dict[str, Any] = {}
    for key, value in table.items():
        name = str(key).replace("_", "-")
        if name not in names:
            near = difflib.get_close_matches(name, sorted(names), n=1)
            hint = f"; did you mean {near[0]!r}?" if near else ""
            raise ConfigError(f"{path}: {name!r} is no option of replay run{hint}")
        given[name] = _resolved(names[name], value, path.parent)
    out: dict[str, dict[str, Any]] = {}
    for command_name, command in by_command.items():
        own = _long_names(command)
        shared = given if command is run else {k: v for k, v in given.items() if k == "store"}
        out[command_name] = {str(own[k].name): v for k, v in shared.items() if k in own}
    return out


def _long_names(command: click.Command) -> dict[str, click.Option]:
    """A command's options by their long names, without the dashes."""
    return {
        opt[2:]: param
        for param in command.params
        if isinstance(param, click.Option)
        for opt in param.opts
        if opt.startswith("--")
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
