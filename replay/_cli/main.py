"""The ``replay`` command: a click group, and the one place errors become lines.

Every ``ReplayError`` (and a bad option value) becomes ``error: <message>``
on stderr and ``ExitCode.BAD_INPUT``, the settings it names (```agent.entry```) as
the options that fill them (``--agent``); anything else is a bug and keeps its
traceback. The line is printed with its control characters shown escaped
(``replay.plugins.printable``): a message may quote a case id or a file's content.
Each command parses its options, calls one public function of ``replay`` and
renders what it returns.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import click

from recorder import ReplayError, __version__
from replay import ExitCode

from ..plugins import printable
from . import (
    check_cases,
    diff,
    gate,
    grade,
    health,
    importing,
    judge,
    judge_check,
    noise,
    plan,
    promote,
    regrade,
    report,
    run,
    runs,
    sample,
    show,
    stub_llm,
    view,
)
from .config import default_map
from .run_options import flags


class _Group(click.Group):
    def invoke(self, ctx: click.Context) -> Any:
        try:
            return super().invoke(ctx)
        except ReplayError as exc:  # (an error of the environment says so: exit 3)
            click.echo(f"error: {printable(flags(str(exc)))}", err=True)
            ctx.exit(getattr(exc, "exit_code", ExitCode.BAD_INPUT))
        except click.UsageError as exc:  # a bad option value: one line too, not the usage block
            click.echo(f"error: {printable(exc.format_message())}", err=True)
            ctx.exit(ExitCode.BAD_INPUT)


@click.group(cls=_Group)
@click.version_option(__version__, prog_name="agent-replay")
@click.pass_context
def cli(ctx: click.Context) -> None:
    """Record LLM agent sessions into cassettes, replay them, grade what they did.

    Defaults for any command's options come from the nearest replay.toml, or
    pyproject.toml's [tool.agent-replay] table, from here up (agent, tools,
    llm-url, store, isolation...); the command line wins.
    """
    commands = [c for c in cli.commands.values() if not isinstance(c, click.Group)]
    ctx.default_map = default_map(commands, Path.cwd())


for command in (
    show.show,
    grade.grade,
    run.run,
    runs.runs,
    report.report,
    diff.diff,
    gate.gate_command,
    plan.plan_command,
    noise.noise_command,
    promote.promote_command,
    check_cases.check_cases,
    health.suite_health_command,
    health.graduate_command,
    importing.import_group,
    judge.label,
    judge.judge_agreement_command,
    judge.label_agreement_command,
    judge_check.judge_check_command,
    sample.sample_command,
    regrade.regrade_command,
    regrade.golden_command,
    stub_llm.stub_llm,
    view.view,
):
    cli.add_command(command)


def main() -> None:
    """Run the ``replay`` command line."""
    cli()
