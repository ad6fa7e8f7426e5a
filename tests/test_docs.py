"""The docs keep up with the CLI: every command is in the docs and has --help.

Modelled on sqlite-utils' tests/test_docs.py: the commands are found by walking
the click group (subcommands of ``replay import`` included), not listed by hand.
"""

from __future__ import annotations

import inspect

import click
import pytest
from click.testing import CliRunner

from replay._cli.main import cli
from tests.helpers import documentation

DOCS = documentation()


def _commands(group: click.Group, prefix: tuple[str, ...] = ()) -> list[tuple[str, ...]]:
    found = []
    for name, command in sorted(group.commands.items()):
        path = (*prefix, name)
        found.append(path)
        if isinstance(command, click.Group):
            found += _commands(command, path)
    return found


COMMANDS = _commands(cli)


def _command(path: tuple[str, ...]) -> click.Command:
    command: click.Command = cli
    for name in path:
        assert isinstance(command, click.Group)
        command = command.commands[name]
    return command


def _words(text: str) -> str:
    return " ".join(text.split())


def test_the_walk_finds_every_command() -> None:
    names = {" ".join(path) for path in COMMANDS}
    assert {"run", "gate", "import", "import tau2", "import tau-bench-trajectories"} <= names
    assert len(names) >= 16


@pytest.mark.parametrize("path", COMMANDS, ids=" ".join)
def test_command_is_documented(path: tuple[str, ...]) -> None:
    assert f"replay {' '.join(path)}" in DOCS


@pytest.mark.parametrize("path", [(), *COMMANDS], ids=lambda p: " ".join(p) or "replay")
def test_command_has_help_that_starts_with_its_docstring(path: tuple[str, ...]) -> None:
    result = CliRunner().invoke(cli, [*path, "--help"], catch_exceptions=False)
    assert result.exit_code == 0
    callback = _command(path).callback
    assert callback is not None
    doc = inspect.getdoc(callback)
    assert doc, f"replay {' '.join(path)} has no docstring"
    first = doc.splitlines()[0]
    assert _words(first) in _words(result.output)
