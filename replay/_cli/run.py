"""``replay run``: trials of cases in one mode, into the results store."""

from __future__ import annotations

import json
import shlex
import sys
from pathlib import Path

import click
from click.core import ParameterSource
from rich.console import Console
from rich.progress import Progress

from recorder import ConfigError
from replay import (
    AgentCommand,
    AgentSettings,
    ExecutorSettings,
    ExitCode,
    FaultSettings,
    JudgeSettings,
    LlmSettings,
    McpServer,
    RedactionSettings,
    RunReport,
    RunSpec,
    Store,
    UserSettings,
    build_report,
    execute,
    report_json,
)

from ..agents import allowed_host, unavailable
from ..modes import REGISTRY
from ..results import DEFAULT_PATH, MIN_AGREEMENT, MIN_LABELS
from ..surroundings import parse_faults


def _settings(pairs: tuple[str, ...]) -> dict[str, object]:
    settings: dict[str, object] = {}
    for pair in pairs:
        key, sep, value = pair.partition("=")
        if not sep or not key:
            raise ConfigError(f"--set {pair!r} is not key=value")
        try:
            settings[key] = json.loads(value)
        except ValueError:
            settings[key] = value
    return settings


def _prices(pairs: tuple[str, ...]) -> dict[str, tuple[float, float]]:
    prices = {}
    for pair in pairs:
        model, _, rates = pair.partition("=")
        given, _, taken = rates.partition(":")
        try:
            prices[model] = (float(given), float(taken))
        except ValueError:
            raise click.BadParameter(
                f"{pair!r} is not MODEL=IN:OUT", param_hint="--price"
            ) from None
    return prices


def _mcp_servers(servers: tuple[str, ...], envs: tuple[str, ...]) -> dict[str, McpServer]:
    """``--mcp-server NAME=COMMAND|URL`` and ``--mcp-env NAME:KEY=VALUE`` as the servers."""
    given: dict[str, list[str]] = {}
    for text in servers:
        name, sep, value = text.partition("=")
        try:
            words = shlex.split(value)
        except ValueError as exc:
            raise click.BadParameter(f"{text!r}: {exc}", param_hint="--mcp-server") from None
        if not sep or not name.strip():
            raise click.BadParameter(
                f"{text!r} is not NAME=COMMAND or NAME=URL", param_hint="--mcp-server"
            )
        if not words:
            raise click.BadParameter(f"{text!r} has no command or URL", param_hint="--mcp-server")
        if name in given:
            raise click.BadParameter(f"server {name!r} is named twice", param_hint="--mcp-server")
        given[name] = words
    env: dict[str, dict[str, str]] = {}
    for text in envs:
        name, _, setting = text.partition(":")
        key, sep, value = setting.partition("=")
        if not sep or not key:
            raise click.BadParameter(f"{text!r} is not NAME:KEY=VALUE", param_hint="--mcp-env")
        if name not in given or given[name][0].startswith(_URLS):
            raise click.BadParameter(
                f"{text!r}: no --mcp-server {name!r} started by a command", param_hint="--mcp-env"
            )
        env.setdefault(name, {})[key] = value
    out = {}
    for name, words in given.items():
        if not words[0].startswith(_URLS):
            out[name] = McpServer(command=tuple(words), env=env.get(name, {}))
        elif len(words) == 1:
            out[name] = McpServer(url=words[0])
        else:
            raise click.BadParameter(f"{name!r}: a URL is one word", param_hint="--mcp-server")
    return out


_URLS = ("http://", "https://")
_SECRET_OPTIONS = ("llm_url", "judge_url", "user_url", "sets", "mcp_servers", "mcp_envs")
"""What ``--resume`` takes again: the secrets in them are not stored with the run."""


@click.command()
@click.argument("cases", nargs=-1, type=click.Path(path_type=Path))
@click.option("--run", "name", required=True, help="Name of the run (or of the run to resume).")
@click.option(
    "--mode",
    type=click.Choice(list(REGISTRY)),
    default="sandbox",
    show_default=True,
    help="; ".join(f"{m.name}: {m.summary}" for m in REGISTRY.values()) + ".",
)
@click.option(
    "--agent", help="The agent, module:function (the modes that run it: offline, sandbox, record)."
)
@click.option(
    "--agent-cmd",
    "agent_cmd",
    help="Or the agent as a program, split as a shell would: instruction on stdin, answer on "
    "stdout, the LLM and tools' addresses in its environment (OPENAI_BASE_URL, REPLAY_MCP_URL).",
)
@click.option(
    "--isolation",
    type=click.Choice(["auto", "none", "process"]),
    default="auto",
    show_default=True,
    help="Where the agent runs: process, in a process of its own inside walls (bubblewrap: "
    "its own network with only the trial's endpoints, its own processes, a read-only "
    "filesystem), for --agent and --agent-cmd alike; none, a program as a plain child and a "
    "Python agent in this process; auto, process for sandbox where this machine can (said "
    "when it cannot), none for the other modes.",
)
@click.option(
    "--trial-timeout",
    type=click.FloatRange(min=0, min_open=True),
    default=600.0,
    show_default=True,
    help="Seconds the agent may run in a trial, wherever it runs; past it, a program or "
    "walled agent is stopped, an in-process async agent cancelled, a sync one left behind "
    "(its later tool and LLM calls refused), and the trial is an error (guard timeout).",
)
@click.option(
    "--trial-memory",
    type=click.IntRange(min=1),
    help="Megabytes an agent in a process of its own (--agent-cmd, or --isolation process) "
    "may hold (resident, its processes together); past it, it is stopped and the trial is "
    "an error (guard memory).",
)
@click.option(
    "--max-llm-tokens",
    type=click.IntRange(min=1),
    help="Input+output tokens (as the LLM reports them) a trial's LLM calls may use; past "
    "it, the trial is an error (guard llm_tokens) and its next LLM request is refused "
    "(HTTP 403). A reply without usage cannot be counted (the cassette says so).",
)
@click.option(
    "--max-tool-result-chars",
    type=click.IntRange(min=1),
    help="Characters (as JSON) of a tool result the agent may be given; a longer one is "
    "an error of that call instead, and the trial is an error (guard tool_result_chars).",
)
@click.option("--tools", help="Tool factory module:function taking the world's connection.")
@click.option(
    "--trials",
    "-k",
    default=1,
    show_default=True,
    type=click.IntRange(min=1),
    help="Trials per case (review: one per recorded cassette).",
)
@click.option(
    "--llm",
    type=click.Choice(["live", "frozen"]),
    default=None,
    help="A live endpoint, or answers from the cassettes. [default: the mode's: "
    + "; ".join(f"{m.name}: {m.default_llm}" for m in REGISTRY.values() if m.llm)
    + "]",
)
@click.option("--llm-url", help="OpenAI-compatible base URL for a live LLM.")
@click.option(
    "--cassettes", type=click.Path(path_type=Path), help="Recorded cassettes (review, offline)."
)
@click.option("--model", help="Model id for the agent.")
@click.option("--set", "sets", multiple=True, help="key=value settings for the agent (repeatable).")
@click.option(
    "--concurrency", "-j", default=1, show_default=True, help="Trials in flight, over all workers."
)
@click.option(
    "--executor",
    type=click.Choice(["local", "ray", "dask"]),
    default="local",
    show_default=True,
    help="Where trials run: this machine, a Ray cluster or a Dask cluster.",
)
@click.option(
    "--workers",
    default=1,
    show_default=True,
    type=click.IntRange(min=1),
    help="Worker processes (local: 1 runs trials in this process), Ray actors or Dask workers.",
)
@click.option("--ray-address", help="Ray cluster to join [default: RAY_ADDRESS, else a local one].")
@click.option(
    "--ship",
    type=click.Path(exists=True, file_okay=False, path_type=Path),
    help="Folder with the agent's code, shipped to Ray workers (their working directory).",
)
@click.option("--dask-address", help="Dask scheduler to use [default: a local cluster].")
@click.option("--store", type=click.Path(path_type=Path), default=DEFAULT_PATH, show_default=True)
@click.option("--resume", is_flag=True, help="Finish an interrupted run named by --run.")
@click.option(
    "--price",
    "prices",
    multiple=True,
    help="MODEL=IN:OUT, USD per million input/output tokens: trial costs and max_cost.",
)
@click.option(
    "--allow-env",
    multiple=True,
    help="Let the sandboxed agent see this secret-like environment variable (repeatable).",
)
@click.option(
    "--secret-env",
    multiple=True,
    metavar="NAME",
    help="Scrub this environment variable's value from everything the run writes (repeatable; "
    "credentials in headers and URLs, --allow-env values and secret-named --set values are "
    "scrubbed without it).",
)
@click.option(
    "--redact-tool",
    "redact_tools",
    multiple=True,
    metavar="TOOL.args|result.PATH",
    help="Replace the value at this path of tool calls in the cassettes, e.g. "
    "'*.args.card_number' or 'get_customer.result.ssn' (repeatable).",
)
@click.option(
    "--allow-host",
    "allow_hosts",
    multiple=True,
    metavar="HOST[:PORT]",
    help="Let the sandboxed agent reach this host (port 443 unless given; repeatable): "
    "anything else it tries is refused and fails the trial as a sandbox violation.",
)
@click.option(
    "--mcp-server",
    "mcp_servers",
    multiple=True,
    metavar="NAME=COMMAND|URL",
    help="A third-party MCP server the agent reaches as env.mcp_servers[NAME]: a command "
    "(split like a shell; {world} is the trial's world as a SQLite file) or an http(s) URL "
    "(repeatable).",
)
@click.option(
    "--mcp-env",
    "mcp_envs",
    multiple=True,
    metavar="NAME:KEY=VALUE",
    help="An environment variable for server NAME's command (repeatable; stored with the run).",
)
@click.option(
    "--ignore-host",
    "ignore_hosts",
    multiple=True,
    metavar="HOST[/PATH]",
    help="Never record calls to this host (or path prefix); offline and in the sandbox they get "
    "an empty success (repeatable; added to the default list of the SDKs' tracing endpoints).",
)
@click.option(
    "--no-default-ignore",
    is_flag=True,
    help="Record the SDKs' tracing endpoints too (see recorder.DEFAULT_IGNORE_HOSTS).",
)
@click.option(
    "--grader",
    "graders",
    multiple=True,
    metavar="NAME|MODULE:NAME",
    help="Also grade every case with this registered grader (@replay.graders.grader); "
    "MODULE:NAME imports the module that registers it (repeatable).",
)
@click.option("--judge-url", help="OpenAI-compatible base URL of the LLM judge (rubrics).")
@click.option("--judge-model", help="Model id of the LLM judge.")
@click.option(
    "--judge-timeout",
    default=60.0,
    show_default=True,
    help="Seconds a judge call may take in all (every byte of its answer); past it the "
    "grade is unknown.",
)
@click.option(
    "--judge-min-labels",
    default=MIN_LABELS,
    show_default=True,
    type=click.IntRange(min=0),
    help="Human labels a judge needs before its grades count (0: they count at once).",
)
@click.option(
    "--judge-min-agreement",
    default=MIN_AGREEMENT,
    show_default=True,
    type=click.FloatRange(0, 1),
    help="Agreement with human labels a judge must exceed before its grades count.",
)
@click.option("--no-judge", is_flag=True, help="Skip rubric grading.")
@click.option(
    "--fault",
    "faults",
    multiple=True,
    help="Inject KIND[:TOOL][@RATE] in offline/sandbox trials, e.g. duplicate:issue_refund, "
    "llm_429@0.3 (repeatable; kinds: timeout raise http_5xx duplicate truncated stale "
    "malformed_json llm_429 llm_5xx).",
)
@click.option("--fault-seed", default=0, show_default=True, help="Seed of the fault draws.")
@click.option(
    "--user",
    "user_source",
    type=click.Choice(["live", "frozen"]),
    default="live",
    show_default=True,
    help="Multi-turn cases: a live simulated user, or the one in the cassettes.",
)
@click.option(
    "--user-url", help="OpenAI-compatible base URL of the simulated user [default: --llm-url]."
)
@click.option("--user-model", default="user-sim", show_default=True, help="Model playing the user.")
@click.option(
    "--user-timeout",
    default=60.0,
    show_default=True,
    help="Seconds a simulated user's answer may take in all; past it the user has failed.",
)
@click.option(
    "--measure",
    is_flag=True,
    help="A measurement run, whose point is the numbers: exit 0 whatever the verdicts "
    "(still 2 on bad input, 130 on Ctrl-C).",
)
@click.option(
    "--json",
    "as_json",
    is_flag=True,
    help="At the end, print one JSON object on stdout and nothing else there: the report "
    "(`replay report --json`) with the store and the exit status; progress goes to stderr.",
)
def run(
    cases: tuple[Path, ...],
    name: str,
    mode: str,
    agent: str | None,
    agent_cmd: str | None,
    isolation: str,
    trial_timeout: float,
    trial_memory: int | None,
    max_llm_tokens: int | None,
    max_tool_result_chars: int | None,
    tools: str | None,
    trials: int,
    llm: str | None,
    llm_url: str | None,
    cassettes: Path | None,
    model: str | None,
    sets: tuple[str, ...],
    concurrency: int,
    store: Path,
    resume: bool,
    allow_env: tuple[str, ...],
    secret_env: tuple[str, ...],
    redact_tools: tuple[str, ...],
    allow_hosts: tuple[str, ...],
    mcp_servers: tuple[str, ...],
    mcp_envs: tuple[str, ...],
    ignore_hosts: tuple[str, ...],
    no_default_ignore: bool,
    graders: tuple[str, ...],
    prices: tuple[str, ...],
    judge_url: str | None,
    judge_model: str | None,
    judge_timeout: float,
    judge_min_labels: int,
    judge_min_agreement: float,
    no_judge: bool,
    faults: tuple[str, ...],
    fault_seed: int,
    user_source: str,
    user_url: str | None,
    user_model: str,
    user_timeout: float,
    executor: str,
    workers: int,
    ray_address: str | None,
    ship: Path | None,
    dask_address: str | None,
    measure: bool,
    as_json: bool,
) -> None:
    """Run CASES (case files) in one mode and store every trial and grade.

    review grades recorded cassettes again; offline runs the agent with tool
    calls answered from the cassettes; sandbox runs it with real tools in a
    fresh world, where HTTP may reach only the LLM's host and environment
    variables named like secrets (*KEY*, *TOKEN*, *SECRET*, *PASSWORD*) are
    hidden unless allowed. Resume an interrupted run with --resume --run NAME.

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
    servers = _mcp_servers(mcp_servers, mcp_envs)  # (bad input: before a store is made)
    results = Store(store)
    if resume:
        context = click.get_current_context()
        given = [
            p.name
            for p in context.command.params
            if p.name not in ("name", "store", "resume", "measure", "as_json", *_SECRET_OPTIONS)
            and context.get_parameter_source(p.name or "") == ParameterSource.COMMANDLINE
        ]
        if given:
            raise ConfigError(
                f"--resume continues run {name!r} as it was started; drop "
                + ", ".join(sorted(given))
            )
        stored = results.run(name)
        if stored is None:
            raise ConfigError(f"no run {name!r} to resume in {results.path}")
        spec = RunSpec.from_stored(stored["spec"]).restored(  # its secrets, given again
            llm_url=llm_url,
            judge_url=judge_url,
            user_url=user_url,
            settings=_settings(sets),
            mcp_servers=servers,
        )
    else:
        if isolation == "auto":
            isolation = _isolation(mode)
        spec = RunSpec(
            name=name,
            cases=[str(c.resolve()) for c in cases],
            mode=mode,
            trials=trials,
            cassettes=str(cassettes.resolve()) if cassettes else None,
            graders=list(graders),
            agent=AgentSettings(
                agent,
                tools,
                model,
                _settings(sets),
                allow_env=list(allow_env),
                mcp_servers=servers,
                command=list(AgentCommand.parse(agent_cmd).argv) if agent_cmd else None,
                isolation=isolation,  # type: ignore[arg-type]
                timeout=trial_timeout,
                memory_mb=trial_memory,
                allow_hosts=[":".join(map(str, allowed_host(h))) for h in allow_hosts],
                max_llm_tokens=max_llm_tokens,
                max_tool_result_chars=max_tool_result_chars,
            ),
            llm=LlmSettings(
                llm,  # type: ignore[arg-type]
                llm_url,
                ignore_hosts=list(ignore_hosts),
                default_ignore=not no_default_ignore,
                prices=_prices(prices),
            ),
            judge=JudgeSettings(
                judge_url,
                judge_model,
                judge_timeout,
                judge_min_labels,
                judge_min_agreement,
                enabled=not no_judge,
            ),
            user=UserSettings(user_source, user_url, user_model, user_timeout),  # type: ignore[arg-type]
            faults=FaultSettings([str(f) for f in parse_faults(faults)], fault_seed),
            executor=ExecutorSettings(
                executor,  # type: ignore[arg-type]
                workers,
                concurrency,
                ray_address,
                str(ship.resolve()) if ship else None,
                dask_address,
            ),
            redaction=RedactionSettings(list(redact_tools), list(secret_env)),
        )
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
        for line in _summary(report, results, store, verdicts, measure):
            click.echo(line)
    if code != ExitCode.OK:
        click.get_current_context().exit(code)


def _execute(spec: RunSpec, results: Store, resume: bool) -> None:
    """``execute``, with progress on stderr (a bar where stderr is a terminal, else lines)."""

    def warn(message: str) -> None:
        click.echo(f"warning: {message}", err=True)

    if not sys.stderr.isatty():  # where the progress goes: a bar on a terminal, else lines

        def line(what: str | None, done: int, total: int) -> None:
            if what is not None:
                click.echo(f"[{done}/{total}] {what}", err=True)

        execute(spec, results, resume=resume, on_trial=line, on_warning=warn)
        return
    with Progress(console=Console(stderr=True), transient=True) as progress:
        task = progress.add_task(f"run {spec.name}", total=None)

        def tick(what: str | None, done: int, total: int) -> None:
            description = what or f"run {spec.name}"
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


def _rate(value: float | None) -> str:
    return "-" if value is None else f"{value:.3f}"


def _isolation(mode: str) -> str:
    """``--isolation auto``: walls for a mode that asks for them, where this machine can."""
    if not REGISTRY[mode].walled:
        return "none"
    why = unavailable()
    if why is None:
        return "process"
    click.echo(
        f"{mode}: no walls on this machine ({why}): each agent runs in this process "
        "(--isolation none; see the README's known limits)",
        err=True,
    )
    return "none"
