"""``replay sample RUN``: trials for a person to read (``replay.sample``), and how to label them."""

from __future__ import annotations

import json
import shlex
from pathlib import Path

import click

from replay import Store, TrialRecord, sample

from ..plugins import printable
from ..results import DEFAULT_PATH
from ..views import review_path
from .view import serve_until_stopped


def _line(trial: TrialRecord) -> str:
    why = trial.why_not_passed
    said = trial.verdict.value + (f", {why[0].value}" if why else "")
    read = f"replay show {shlex.quote(trial.cassette)}" if trial.cassette else "(no cassette)"
    return f"  {trial.case_id}#{trial.idx}  {said}  {read}"


@click.command("sample")
@click.argument("run")
@click.option(
    "--pass", "passed", default=5, show_default=True, type=click.IntRange(0), help="Passing trials."
)
@click.option(
    "--fail", "failed", default=5, show_default=True, type=click.IntRange(0), help="Failed trials."
)
@click.option("--seed", default=0, show_default=True, help="The same seed picks the same trials.")
@click.option("--store", type=click.Path(path_type=Path), default=DEFAULT_PATH, show_default=True)
@click.option("--json", "as_json", is_flag=True, help="Print the picks as JSON.")
@click.option("--view", "serve", is_flag=True, help="Then serve the review queue (replay view).")
@click.option(
    "--port", type=click.IntRange(0, 65535), help="With --view: the port (default: a free one)."
)
def sample_command(
    run: str,
    passed: int,
    failed: int,
    seed: int,
    store: Path,
    as_json: bool,
    serve: bool,
    port: int | None,
) -> None:
    """Pick trials of RUN for a person to read and label: failures first, then passes.

    Failed trials (verdict fail, or an error the agent is to blame for) are
    picked round-robin over (case, failure cause), passing ones over cases,
    each in a seeded shuffle: a case that fails often does not crowd out the
    others, and the same store, run and --seed pick the same trials. Label them
    with `replay label`, or in the review queue of `replay view` (--view serves
    it: a form per trial).
    """
    if port is not None and not serve:
        raise click.UsageError("--port serves the review queue: give --view too")
    picked = sample(Store(store, create=False), run, passed=passed, failed=failed, seed=seed)
    queue = review_path(run, passed=passed, failed=failed, seed=seed)
    where = "" if store == DEFAULT_PATH else f" --store {shlex.quote(str(store))}"
    label = f"replay label {shlex.quote(run)} CASE#INDEX pass|fail|unsure --by NAME{where}"
    if as_json:
        click.echo(json.dumps({**picked.to_json(), "label": label, "review": queue}, indent=2))
    else:
        click.echo(printable(f"run {run}, seed {seed}"))
        for title, trials, total in (
            ("failed", picked.failed, picked.failing),
            ("passed", picked.passed, picked.passing),
        ):
            click.echo(f"{title}: {len(trials)} of {total}")
            for trial in trials:
                click.echo(printable(_line(trial)))
        click.echo(printable(f"label: {label}"))
        if not serve:
            click.echo(f"review queue: {queue} on `replay view{where}` (or rerun with --view)")
    if serve:
        serve_until_stopped(store, host="127.0.0.1", port=port or 0, page=queue, err=as_json)
