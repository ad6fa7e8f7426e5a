"""``replay stub-llm``: run the stub LLM server in the foreground."""

from __future__ import annotations

from pathlib import Path

import click

from recorder import ConfigError

from ..modes import load_callable
from ..stub_llm import EchoPolicy, Policy, ScriptedPolicy, serve


@click.command("stub-llm")
@click.option(
    "--script",
    type=click.Path(exists=True, dir_okay=False, path_type=Path),
    help='JSON script: {"turns": [{"content": ...} | {"tool_calls": [...]}], "final": ...}. '
    "Without it the stub echoes the last user message.",
)
@click.option(
    "--policy",
    "policy_name",
    metavar="MODULE:FUNCTION",
    help="Or a Python policy: a function returning one (e.g. examples.shop:refund_policy).",
)
@click.option("--host", default="127.0.0.1", show_default=True)
@click.option("--port", default=8765, show_default=True, help="0 picks a free port.")
@click.option("--seed", default=0, show_default=True, help="Seed for flakiness.")
@click.option(
    "--flake-rate",
    default=0.0,
    show_default=True,
    type=click.FloatRange(0.0, 1.0),
    help="Probability that a turn repeats the previous one (a flaky model).",
)
def stub_llm(
    script: Path | None,
    policy_name: str | None,
    host: str,
    port: int,
    seed: int,
    flake_rate: float,
) -> None:
    """Serve OpenAI chat completions and Responses, and Anthropic messages, from a script."""
    policy: Policy = EchoPolicy()
    if script is not None and policy_name is not None:
        raise click.UsageError("give --script or --policy, not both")
    if policy_name is not None:
        try:
            made = load_callable(policy_name)()
        except TypeError as exc:
            raise ConfigError(f"{policy_name!r} makes no policy without arguments: {exc}") from None
        except Exception as exc:  # its own failure: one line, not a traceback
            raise ConfigError(f"{policy_name!r} failed: {type(exc).__name__}: {exc}") from None
        if not callable(made):
            raise ConfigError(f"{policy_name!r} did not return a stub policy (request -> reply)")
        policy = made
    if script is not None:
        try:
            policy = ScriptedPolicy.from_json(script)
        except ValueError as exc:
            raise ConfigError(str(exc)) from None
    serve(policy, host=host, port=port, seed=seed, flake_rate=flake_rate)
