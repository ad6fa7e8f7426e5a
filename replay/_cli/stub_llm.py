"""``replay stub-llm``: run the stub LLM server in the foreground."""

from __future__ import annotations

from pathlib import Path

import click

from recorder import ConfigError, ReplayError

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
    if script is not None and policy_name is not None:
        raise click.UsageError("give --script or --policy, not both")
    policy = policy_of(str(script) if script is not None else policy_name or "echo")
    serve(policy, host=host, port=port, seed=seed, flake_rate=flake_rate)


def policy_of(given: str) -> Policy:
    """The stub's policy: a JSON script's path, a ``MODULE:FUNCTION`` making one, or ``echo``.

    (``echo``: the last user message said back.)

    Raises:
        ConfigError: The script does not read, or the function makes no policy.
    """
    if given == "echo":
        return EchoPolicy()
    if given.endswith(".json") or Path(given).is_file():
        try:
            return ScriptedPolicy.from_json(Path(given))
        except ValueError as exc:  # (it names the file)
            raise ConfigError(str(exc)) from None
        except OSError as exc:
            raise ConfigError(f"stub script {given}: {exc.strerror or exc}") from None
    try:
        made = load_callable(given)()
    except TypeError as exc:
        raise ConfigError(f"{given!r} makes no policy without arguments: {exc}") from None
    except ReplayError:
        raise
    except Exception as exc:  # its own failure: one line, not a traceback
        raise ConfigError(f"{given!r} failed: {type(exc).__name__}: {exc}") from None
    if not callable(made):
        raise ConfigError(f"{given!r} did not return a stub policy (request -> reply)")
    return made  # type: ignore[no-any-return]
