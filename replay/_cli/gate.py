"""``replay gate``: ``replay.gate`` and ``replay.write_junit``; exit 0 holds, 1 not, 3 undecided."""

from __future__ import annotations

from pathlib import Path

import click
from click.core import ParameterSource

from recorder import ConfigError
from replay import ExitCode, Store, Thresholds, gate, write_junit

from ..plugins import printable
from ..results import DEFAULT_PATH
from .options import confidence_option, fdr_option, power_option


def _k_value(text: str | None) -> tuple[int, float] | None:
    if text is None:
        return None
    k, _, value = text.partition("=")
    try:
        return int(k), float(value)
    except ValueError:
        raise ConfigError(f"--min-pass-k {text!r} is not K=VALUE, e.g. 4=0.5") from None


@click.command("gate")
@click.option(
    "--baseline",
    help="The run to hold the line against [default: none: only the thresholds on the "
    "candidate alone, --min-pass1, --min-pass-k, --max-unsupported, --max-failing-critical].",
)
@click.option("--candidate", required=True, help="The run under test.")
@click.option("--min-pass1", type=float, help="Minimum suite pass^1 of the candidate.")
@click.option("--min-pass-k", help="K=VALUE: minimum suite pass^K of the candidate.")
@click.option(
    "--max-drop",
    type=float,
    help="Largest allowed fall of suite pass^1, paired by case: holds when the interval's "
    "upper bound on the drop is within it (needs --baseline).",
)
@click.option(
    "--critical-tag",
    default="critical",
    show_default=True,
    help="Cases with this tag may not newly fail (with --baseline), and are those "
    "--max-failing-critical counts.",
)
@click.option(
    "--max-failing-critical",
    type=click.IntRange(min=0),
    help="Most critical-tagged cases allowed a trial that does not pass (0: they all pass).",
)
@click.option(
    "--max-unsupported", type=float, help="Largest allowed share of unsupported + error trials."
)
@click.option(
    "--vary",
    multiple=True,
    help="A pin meant to differ (repeatable); default: any one of agent, model, settings, llm.",
)
@click.option(
    "--strict-pins",
    is_flag=True,
    help="Refuse runs that differ in a pin only noted otherwise (isolation: walled or not).",
)
@confidence_option
@power_option
@click.option(
    "--allow-underpowered",
    is_flag=True,
    help="When the runs cannot settle --max-drop, fail the gate instead of exiting 3.",
)
@fdr_option
@click.option("--junit", type=click.Path(path_type=Path), help="Write JUnit XML here.")
@click.option("--store", type=click.Path(path_type=Path), default=DEFAULT_PATH, show_default=True)
def gate_command(
    baseline: str | None,
    candidate: str,
    min_pass1: float | None,
    min_pass_k: str | None,
    max_drop: float | None,
    critical_tag: str,
    max_unsupported: float | None,
    max_failing_critical: int | None,
    vary: tuple[str, ...],
    strict_pins: bool,
    confidence: float,
    power: float,
    allow_underpowered: bool,
    fdr: float,
    junit: Path | None,
    store: Path,
) -> None:
    """Gate a merge: does the candidate run hold against the baseline?

    With --baseline, no critical case may newly fail, besides the thresholds
    given. Without one (a first CI run), only the thresholds on the candidate
    alone are checked, and one must be given: --min-pass1, --min-pass-k,
    --max-unsupported, --max-failing-critical.

    --max-drop compares the runs paired by case. It holds when the upper end
    of the drop's interval (at --confidence) is within the limit, fails when
    the drop is real (the whole interval above 0) and not within it, and
    otherwise cannot decide: it then prints the smallest drop these runs can
    detect (at --power) and about how many cases x trials the limit needs,
    and exits 3. Run more trials or cases, or loosen the limit to what the
    runs can see; --allow-underpowered fails such a gate instead.

    Exit 0 when every threshold holds, 1 when one does not, 3 when nothing
    failed but --max-drop could not be decided, 2 on bad input (including
    runs whose pins differ in more than the variable under test: the fixture
    or grader changed too; a run not finished or without trials; and
    --max-drop or --critical-tag without --baseline). --junit: a testcase
    per case and per check, failing exactly when the gate does not hold.
    """
    context = click.get_current_context()
    tagged = context.get_parameter_source("critical_tag") == ParameterSource.COMMANDLINE
    if baseline is None and tagged and max_failing_critical is None:
        raise ConfigError(
            "--critical-tag: a case newly failing needs --baseline RUN; without one, "
            "give --max-failing-critical N"
        )
    thresholds = Thresholds(
        min_pass1,
        _k_value(min_pass_k),
        max_drop,
        critical_tag,
        max_unsupported,
        max_failing_critical,
        confidence=confidence,
        power=power,
        allow_underpowered=allow_underpowered,
        fdr=fdr,
    )
    results = Store(store, create=False)
    with results.snapshot():  # (--junit's cases read as the checks were: a run writing)
        result = gate(results, baseline, candidate, thresholds, vary=vary, strict_pins=strict_pins)
        for check in result.checks:
            mark = "ok  " if check.holds else "????" if check.undecided else "FAIL"
            click.echo(f"{mark} {printable(check.text)}")
        for note in result.notes:
            click.echo(f"     {printable(note)}")
        if junit is not None:
            write_junit(result, junit, candidate)
    against = f"against {baseline}" if baseline else "on its own (no baseline)"
    verdict = "holds" if result.holds else "cannot decide" if result.undecided else "does not hold"
    click.echo(printable(f"gate {verdict}: {candidate} {against}"))
    if not result.holds:
        context.exit(ExitCode.INCOMPLETE if result.undecided else ExitCode.FAILED)
