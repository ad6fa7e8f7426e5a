"""``replay run``: trials of cases in one mode, into the results store.

Its options are ``run_options.OPTIONS``, one definition each (the setting each fills);
this module runs what they give and says what happened.
"""

from __future__ import annotations

import contextlib
import datetime
import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import click
from click.core import ParameterSource
from rich.console import Console
from rich.markup import escape
from rich.progress import Progress

from recorder import ConfigError
from replay import ExitCode, RunReport, RunSpec, Store, build_report, execute, report_json

from ..cases import check_name
from ..plugins import printable
from ..results import DEFAULT_PATH
from ..stub_llm import StubLLM
from .run_options import AGAIN, OPTIONS, flags, options, settings
from .stub_llm import policy_of


@click.command()
@options
def run(**given: Any) -> None:
    """Run CASES (case files) in one mode and store every trial and grade.

    review grades recorded cassettes again; offline runs the agent with tool
    calls answered from the cassettes; sandbox runs it with real tools in a
    fresh world, where HTTP may reach only the LLM's host and environment
    variables that look like secrets (a word KEY, TOKEN, SECRET, PASSWORD,
    CREDENTIALS, AUTH, *_SK, *_DSN...; a URL with a password) are hidden unless
    allowed. Resume an interrupted run with --resume --run NAME.

    Cases with a rubric are judged by the LLM at --judge-url; a judge's grades
    are advisory until it agrees with human labels (`replay label`,
    `replay judge-agreement`).

    Faults (--fault, and each case's own `faults:`) are injected, seeded, in
    the trials of modes that run the agent: tool calls that time out, raise, answer 5xx,
    come back twice, truncated, stale or as malformed JSON, and LLM calls
    answered 429/5xx.

    Multi-turn cases (a `user:` section) talk with a simulated user: live
    (--user-url, default --llm-url) or frozen (--user frozen: its recorded
    turns, from --cassettes), so an agent-only change replays against the
    same user.

    Limits (--trial-timeout, --trial-memory, --max-llm-tokens,
    --max-tool-result-chars) hold each trial of the modes that run the agent:
    a trial that hits one is an error of cause limit, the limit is its guard
    flag, and the run goes on.

    Third-party MCP servers (--mcp-server NAME=COMMAND|URL) sit behind a
    recording proxy the agent reaches at env.mcp_servers[NAME]: started per
    trial where tools run, answered from the cassettes offline.

    Trials run in this process (threads) by default; --workers N runs them in
    N worker processes, --executor ray|dask on a cluster (the same run, the
    same verdicts). A trial whose worker dies is retried alone and stored as
    error if it takes its worker down twice.

    On a terminal a progress bar shows; elsewhere (a CI log, a pipe) each
    finished trial is a line on stderr (`[3/12] refund-4812 #2 fail (state:
    ...)`). At the end a summary goes to stdout: trials per verdict, suite
    pass^1 and pass^k, why trials did not pass, and the `replay report` to read.

    Exit 0 when every trial passes; 1 when one failed (verdict fail, or an
    error the agent is to blame for: cause agent or limit); 3 when nothing
    failed but some trial could not be judged (an error of cause harness,
    server or user, unsupported, unknown); 2 on bad input; 130 on Ctrl-C.
    --measure exits 0 whatever the verdicts.
    """
    stub = given["stub_llm"]
    if stub is not None and given.get("llm_url"):
        source = click.get_current_context().get_parameter_source
        typed = {p for p in ("stub_llm", "llm_url") if source(p) == ParameterSource.COMMANDLINE}
        if typed == {"llm_url"}:  # the command line's over the project's defaults
            stub = None
        elif typed != {"stub_llm"}:
            raise click.UsageError("give --stub-llm or --llm-url, not both")
    with StubLLM(policy_of(stub)) if stub is not None else contextlib.nullcontext() as llm:
        if llm is not None:
            given = {**given, "llm_url": llm.openai_base_url}
        _run(given)


def _run(given: dict[str, Any]) -> None:
    if given["name"] is None:
        if given["resume"]:
            raise ConfigError("--resume needs --run NAME: the run to go on with")
        given = {**given, "name": run_name()}
        click.echo(
            f"run {given['name']} (named by the time and revision; --run names it)", err=True
        )
    name, store, resume = given["name"], given["store"], given["resume"]
    measure, as_json = given["measure"], given["as_json"]
    # Bad input is said before a store is made; on --resume, only what it takes again is read.
    values = settings(given, AGAIN if resume else None)
    check_name(name, "--run")  # a name, not a path (its cassettes' folder is named after it)
    results = Store(store)
    if resume:
        context = click.get_current_context()
        dropped = [
            f.param
            for f in OPTIONS
            if f.setting is not None
            and not f.again
            and context.get_parameter_source(f.param) == ParameterSource.COMMANDLINE
        ]
        if dropped:
            raise ConfigError(
                f"--resume continues run {name!r} as it was started; drop "
                + ", ".join(sorted(dropped))
            )
        stored = results.run(name)
        if stored is None:
            raise ConfigError(f"no run {name!r} to resume in {results.path}")
        spec = RunSpec.from_stored(dict(stored.spec)).restored(  # its secrets, given again
            llm_url=values["llm.url"],
            judge_url=values["judge.url"],
            user_url=values["user.url"],
            settings=values["agent.settings"],
            mcp_servers=values["agent.mcp_servers"],
        )
    else:
        spec = RunSpec.from_settings(values)
        spec.redaction.redaction()  # a bad --redact-tool path: said before anything starts
    try:
        _execute(spec, results, resume)
    except KeyboardInterrupt:  # the trials finished are stored: say how to go on
        click.echo(
            f"interrupted: the trials finished are stored; go on with "
            f"`replay run --resume --run {name} --store {results.path}`",
            err=True,
        )
        raise SystemExit(ExitCode.INTERRUPTED) from None
    report = build_report(results, name)
    verdicts = ExitCode.of_report(report)
    code = ExitCode.OK if measure else verdicts
    if as_json:
        exit_ = {"code": int(code), "name": code.name, "meaning": code.meaning}
        if measure:
            exit_["meaning"] = f"--measure: 0 whatever the verdicts (alone: {verdicts.name})"
        data = {"run": name, "store": str(results.path), "exit": exit_, **report_json(report)}
        click.echo(json.dumps(data, indent=2))
    else:
        lines = _summary(report, results, store, verdicts, measure)
        stored = results.run(name)
        walled = (stored.pins if stored is not None else {}).get("isolation")
        if walled and spec.agent.isolation == "auto":  # what auto chose, on this machine
            lines.insert(1, f"isolation {walled} (auto: {_WALLS.get(walled, walled)})")
        for line in lines:
            click.echo(printable(line))
    if code != ExitCode.OK:
        click.get_current_context().exit(code)


def _execute(spec: RunSpec, results: Store, resume: bool) -> None:
    """``execute``, with progress on stderr (a bar where stderr is a terminal, else lines)."""

    def warn(message: str) -> None:
        click.echo(f"warning: {printable(flags(message))}", err=True)

    if not sys.stderr.isatty():  # where the progress goes: a bar on a terminal, else lines

        def line(what: str | None, done: int, total: int) -> None:
            if what is not None:
                click.echo(f"[{done}/{total}] {printable(what)}", err=True)

        execute(spec, results, resume=resume, on_trial=line, on_warning=warn)
        return
    with Progress(console=Console(stderr=True), transient=True) as progress:
        named = f"run {escape(spec.name)}"  # (a description is rich markup: a name may hold [)
        task = progress.add_task(named, total=None)

        def tick(what: str | None, done: int, total: int) -> None:
            description = escape(printable(what)) if what else named
            progress.update(task, completed=done, total=total, description=description)

        execute(spec, results, resume=resume, on_trial=tick, on_warning=warn)


def _summary(
    report: RunReport, results: Store, store: Path, verdicts: ExitCode, measure: bool
) -> list[str]:
    """What a run did, for its end: verdicts, suite pass^k, why, its exit status, the report."""
    totals = {v: n for v, n in report.suite.totals.items() if n}
    count = sum(totals.values())
    cases = len(report.cases)
    lines = [
        f"run {report.name}: {count} trial{'s' * (count != 1)} of {cases} "
        f"case{'s' * (cases != 1)}: " + ", ".join(f"{n} {v}" for v, n in totals.items())
    ]
    hats = report.suite.pass_hat
    shown = sorted({1, max(hats, default=1)})
    lines.append("suite " + ", ".join(f"pass^{k} {_rate(hats.get(k))}" for k in shown))
    why = [f"{group.name} {group.count}" for group in report.causes if group.count]
    if why:
        lines.append("not passing, by cause: " + ", ".join(why))
    status = f"exit {int(verdicts)} ({verdicts.name}): {verdicts.meaning}"
    if measure:
        status = f"--measure: exit 0 (the verdicts alone: {int(verdicts)} {verdicts.name})"
    lines.append(status)
    where = "" if store == DEFAULT_PATH else f" --store {results.path}"
    lines.append(f"stored in {results.path}; see `replay report {report.name}{where}`")
    return lines


def run_name(now: datetime.datetime | None = None) -> str:
    """A new run's name when none is given: the time, and the git revision if there is one."""
    stamp = (now or datetime.datetime.now()).strftime("%Y%m%d-%H%M%S")
    try:
        revision = subprocess.run(
            ["git", "rev-parse", "--short", "HEAD"], capture_output=True, text=True, timeout=10
        ).stdout.strip()
    except (OSError, subprocess.SubprocessError):
        revision = ""
    return f"{stamp}-{revision}" if revision.isalnum() else stamp


_WALLS = {"process": "each agent walled in", "none": "agents in this process, unwalled"}


def _rate(value: float | None) -> str:
    return "-" if value is None else f"{value:.3f}"
