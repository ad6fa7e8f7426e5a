"""The ``replay`` command: a click group, and the one place errors become lines.

Every ``ReplayError`` (and a bad option value) becomes ``error: <message>``
on stderr and ``ExitCode.BAD_INPUT``, the settings it names (```agent.entry```) as
the options that fill them (``--agent``); anything else is a bug and keeps its
traceback. The line is printed with its control characters shown escaped
(``replay.plugins.printable``): a message may quote a case id or a file's content.
Each command parses its options, calls one public function of ``replay`` and
renders what it returns.

A command's module is imported when that command runs (or is listed), not with the
group: ``replay report`` does not pay for ``replay run``'s imports (the runners,
the walls, the MCP proxy: most of a second).
"""

from __future__ import annotations

import importlib
from collections.abc import Iterator, MutableMapping
from pathlib import Path
from typing import Any

import click

from recorder import ReplayError, __version__
from replay import ExitCode

from ..plugins import printable
from .config import default_map

COMMANDS: dict[str, str] = {
    "show": "show:show",
    "grade": "grade:grade",
    "run": "run:run",
    "runs": "runs:runs",
    "report": "report:report",
    "diff": "diff:diff",
    "gate": "gate:gate_command",
    "plan": "plan:plan_command",
    "noise": "noise:noise_command",
    "promote": "promote:promote_command",
    "check-cases": "check_cases:check_cases",
    "suite-health": "health:suite_health_command",
    "graduate": "health:graduate_command",
    "import": "importing:import_group",
    "label": "judge:label",
    "judge-agreement": "judge:judge_agreement_command",
    "label-agreement": "judge:label_agreement_command",
    "judge-check": "judge_check:judge_check_command",
    "sample": "sample:sample_command",
    "regrade": "regrade:regrade_command",
    "golden": "regrade:golden_command",
    "stub-llm": "stub_llm:stub_llm",
    "view": "view:view",
}
"""Each command's name and where it is (``module:attribute`` in ``replay._cli``), in the
order ``replay --help`` has always listed them."""


def _load(name: str) -> click.Command:
    module, _, attribute = COMMANDS[name].partition(":")
    command = getattr(importlib.import_module(f"{__package__}.{module}"), attribute)
    if not isinstance(command, click.Command) or command.name != name:
        raise TypeError(f"{COMMANDS[name]} is not the command {name!r}")
    return command


class _Commands(MutableMapping[str, click.Command]):
    """The group's commands by name, each imported when first looked up."""

    def __init__(self) -> None:
        self._loaded: dict[str, click.Command] = {}

    def __getitem__(self, name: str) -> click.Command:
        if name not in self._loaded:
            if name not in COMMANDS:
                raise KeyError(name)
            self._loaded[name] = _load(name)
        return self._loaded[name]

    def __setitem__(self, name: str, command: click.Command) -> None:
        self._loaded[name] = command

    def __delitem__(self, name: str) -> None:
        del self._loaded[name]

    def __iter__(self) -> Iterator[str]:
        return iter({**dict.fromkeys(COMMANDS), **self._loaded})

    def __len__(self) -> int:
        return len({**dict.fromkeys(COMMANDS), **self._loaded})


class _Group(click.Group):
    def list_commands(self, ctx: click.Context) -> list[str]:
        return list(self.commands)  # (in COMMANDS' order, not sorted)

    def invoke(self, ctx: click.Context) -> Any:
        try:
            return super().invoke(ctx)
        except ReplayError as exc:  # (an error of the environment says so: exit 3)
            from .run_options import flags

            click.echo(f"error: {printable(flags(str(exc)))}", err=True)
            ctx.exit(getattr(exc, "exit_code", ExitCode.BAD_INPUT))
        except click.UsageError as exc:  # a bad option value: one line too, not the usage block
            click.echo(f"error: {printable(exc.format_message())}", err=True)
            ctx.exit(ExitCode.BAD_INPUT)


@click.group(cls=_Group, commands=_Commands())
@click.version_option(__version__, prog_name="agent-replay")
@click.pass_context
def cli(ctx: click.Context) -> None:
    """Record LLM agent sessions into cassettes, replay them, grade what they did.

    Defaults for any command's options come from the nearest replay.toml, or
    pyproject.toml's [tool.agent-replay] table, from here up (agent, tools,
    llm-url, store, isolation...); the command line wins.
    """
    ctx.default_map = default_map(_wanted(ctx.invoked_subcommand), Path.cwd())


def _wanted(invoked: str | None) -> Iterator[click.Command]:
    """The commands a project file's defaults are read for: ``run`` and the one invoked.

    (``run``'s options say which keys the file may hold; only the invoked command's
    defaults are used. Imported only when there is a project file.)
    """
    for name in dict.fromkeys(["run", *([invoked] if invoked else [])]):
        command = cli.commands.get(name)
        if command is not None and not isinstance(command, click.Group):
            yield command


def main() -> None:
    """Run the ``replay`` command line."""
    cli()
