"""The ``replay`` command: a click group, exit codes, and the one place errors become lines.

Every ``ReplayError`` becomes ``error: <message>`` on stderr and exit code 2;
anything else is a bug and keeps its traceback.
"""

from __future__ import annotations

from enum import IntEnum
from typing import Any

import click

from recorder import ReplayError, __version__

from . import (
    check_cases,
    diff,
    gate,
    grade,
    health,
    importing,
    judge,
    promote,
    report,
    run,
    show,
    stub_llm,
)


class ExitCode(IntEnum):
    """Exit codes of every ``replay`` command."""

    OK = 0
    FAILED = 1
    """The command ran and its check did not hold (e.g. a gate)."""
    BAD_INPUT = 2
    """Bad input: a missing, corrupt or unsupported file, a bad option."""


class _Group(click.Group):
    def invoke(self, ctx: click.Context) -> Any:
        try:
            return super().invoke(ctx)
        except ReplayError as exc:
            click.echo(f"error: {exc}", err=True)
            ctx.exit(ExitCode.BAD_INPUT)
        except click.UsageError as exc:  # a bad option value: one line too, not the usage block
            click.echo(f"error: {exc.format_message()}", err=True)
            ctx.exit(ExitCode.BAD_INPUT)


@click.group(cls=_Group)
@click.version_option(__version__, prog_name="agent-replay")
def cli() -> None:
    """Record LLM agent sessions into cassettes, replay them, grade what they did."""


for command in (
    show.show,
    grade.grade,
    run.run,
    report.report,
    diff.diff,
    gate.gate_command,
    promote.promote_command,
    check_cases.check_cases,
    health.suite_health_command,
    health.graduate_command,
    importing.import_group,
    judge.label,
    judge.judge_agreement,
    stub_llm.stub_llm,
):
    cli.add_command(command)


def main() -> None:
    """Run the ``replay`` command line."""
    cli()
