"""``replay judge-check``: probe the LLM judge for bias (``replay.judge_check``)."""

from __future__ import annotations

import json
from pathlib import Path

import click

from recorder import ConfigError
from replay import ExitCode, Store, judge_check

from ..graders import Judge, Restater
from ..results import DEFAULT_PATH
from ..runs import MAX_FLIP
from ..views import console, render_judge_check


@click.command("judge-check")
@click.argument("runs", nargs=-1, required=True)
@click.option("--judge-url", required=True, help="OpenAI-compatible endpoint of the judge.")
@click.option("--judge-model", required=True, help="Model id of the judge to check.")
@click.option("--judge-timeout", default=60.0, show_default=True, help="Seconds per judge call.")
@click.option(
    "--max-flip",
    default=MAX_FLIP,
    show_default=True,
    help="Flip rate above which a probe fails the judge.",
)
@click.option("--restate-url", help="OpenAI-compatible endpoint that restates answers (style).")
@click.option("--restate-model", help="Model that restates answers (with --restate-url).")
@click.option("--seed", default=0, show_default=True, help="Seeds pairs, padding, templates.")
@click.option("--store", type=click.Path(path_type=Path), default=DEFAULT_PATH, show_default=True)
@click.option("--json", "as_json", is_flag=True, help="Print the result as JSON.")
def judge_check_command(
    runs: tuple[str, ...],
    judge_url: str,
    judge_model: str,
    judge_timeout: float,
    max_flip: float,
    restate_url: str | None,
    restate_model: str | None,
    seed: int,
    store: Path,
    as_json: bool,
) -> None:
    """Probe the LLM judge for bias on the human-labelled trials of RUNS.

    Each labelled trial is rebuilt from its cassette and judged as it is, then
    perturbed: two trials of one case compared in both orders (position), the
    answer padded with confident, empty text (length), the answer restated
    (style: by --restate-model, else by a template). The flip rate of each
    probe is reported with its 95% interval, with the judge's kappa, true-
    positive, true-negative and unknown rates against the labels; a judge of
    the agent's model family is flagged (self-preference). A judge whose flip
    rate exceeds --max-flip stays advisory whatever its agreement (exit 1),
    and so it stays until a later check measures that probe under it. Exit 3
    when no probe could measure anything; 0 when every probe measured stayed
    at or under --max-flip.
    """
    if (restate_url is None) != (restate_model is None):
        raise ConfigError("--restate-url and --restate-model go together")
    restate = (
        Restater(restate_url, restate_model, judge_timeout)
        if restate_url is not None and restate_model is not None
        else None
    )
    result = judge_check(
        Store(store, create=False),
        list(runs),
        Judge(judge_url, judge_model, judge_timeout, calibrated=None),
        max_flip=max_flip,
        restate=restate,
        seed=seed,
    )
    if as_json:
        click.echo(json.dumps(result.to_json(), indent=2))
    else:
        render_judge_check(result, console())
    if not result.passed:
        click.get_current_context().exit(ExitCode.FAILED)
    if not result.measured:
        click.get_current_context().exit(ExitCode.INCOMPLETE)
