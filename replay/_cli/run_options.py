"""``replay run``'s options, one definition each: its flags, the setting it fills, its help.

``OPTIONS`` generates the command's options (defaults from the settings, ``RunSpec``),
turns what was given into settings by name (``settings``), and names the option of a
setting where the library's errors name settings (``flags``: ```agent.entry``` is
``--agent``).
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable, Mapping
from dataclasses import MISSING, dataclass
from pathlib import Path
from typing import Any

import click

from ..agents import allowed_host
from ..graders import BUILT_IN
from ..graders import REGISTRY as GRADERS
from ..modes import REGISTRY as MODES
from ..results import DEFAULT_PATH
from ..runs import BACKENDS, SETTINGS
from ..surroundings import parse_faults
from .run_values import agent_command, mcp_servers, prices, settings_pairs

_FROM_SETTING: Any = object()
"""A default taken from the setting the option fills."""


@dataclass(frozen=True)
class Flag:
    """One option (or the argument) of ``replay run``, and the setting it fills."""

    decls: tuple[str, ...]
    """As click takes them: ``("--trials", "-k")``, ``("--set", "sets")``."""
    setting: str | None
    """The setting it fills (``SETTINGS``); None: it steers the command (``--store``)."""
    help: str | Callable[[], str] = ""
    """Its help, or what makes it when ``--help`` is asked (registries' names)."""
    type: Any = None
    default: Any = _FROM_SETTING
    multiple: bool = False
    is_flag: bool = False
    metavar: str | None = None
    value: Callable[[Any, Mapping[str, Any]], Any] | None = None
    """The setting's value from the option's and the others' (by parameter name)."""
    again: bool = False
    """Taken again by ``--resume`` (a secret the stored spec hides, or the run's name)."""

    @property
    def param(self) -> str:
        """The parameter click passes the option's value as."""
        named = [d for d in self.decls if not d.startswith("-")]
        return named[0] if named else max(self.decls, key=len).lstrip("-").replace("-", "_")

    def decorator(self) -> Callable[[Any], Any]:
        """The click option (or argument) of this flag."""
        if not self.decls[0].startswith("-"):
            return click.argument(*self.decls, nargs=-1, type=self.type)
        default = self.default
        if default is _FROM_SETTING:
            default = None if self.multiple or self.is_flag else SETTINGS[self.setting or ""]
        shown = default not in (None, MISSING) and not (self.multiple or self.is_flag)
        kwargs: dict[str, Any] = {"multiple": self.multiple, "is_flag": self.is_flag}
        if default not in (None, MISSING):
            kwargs["default"] = default
        return click.option(
            *self.decls,
            cls=_Option,
            lazy_help=self.help,
            type=self.type,
            metavar=self.metavar,
            show_default=shown,
            required=default is MISSING,
            **kwargs,
        )


class _Option(click.Option):
    """An option whose help may be made when it is shown (from registries, plugins' too)."""

    def __init__(self, *args: Any, lazy_help: str | Callable[[], str], **kwargs: Any) -> None:
        kwargs["help"] = lazy_help if isinstance(lazy_help, str) and lazy_help else None
        super().__init__(*args, **kwargs)
        self._lazy_help = lazy_help

    def get_help_record(self, ctx: click.Context) -> tuple[str, str] | None:
        if callable(self._lazy_help):
            self.help = self._lazy_help()
        return super().get_help_record(ctx)


class Registered(click.Choice):  # type: ignore[type-arg]
    """A name in a registry, read when the command runs (installed plugins' names too)."""

    def __init__(self, names: Callable[[], Iterable[str]]) -> None:
        self._names = names
        super().__init__(())

    @property
    def choices(self) -> tuple[str, ...]:
        """The registered names, now."""
        return tuple(self._names())

    @choices.setter
    def choices(self, value: Any) -> None:
        """Nothing: ``click.Choice`` sets them, the registry holds them."""


def _modes() -> str:
    return "; ".join(f"{m.name}: {m.summary}" for m in MODES.values()) + "."


def _llm() -> str:
    by_mode = "; ".join(f"{m.name}: {m.default_llm}" for m in MODES.values() if m.llm)
    return f"A live endpoint, or answers from the cassettes. [default: the mode's: {by_mode}]"


def _graders() -> str:
    others = [n for n in GRADERS.names() if n not in BUILT_IN]
    return (
        "Also grade every case with this registered grader (@replay.graders.grader); "
        "MODULE:NAME imports the module that registers it (repeatable)."
        + (f" Registered besides the built-ins: {', '.join(others)}." if others else "")
    )


def _path(value: Path | None, _: Mapping[str, Any]) -> str | None:
    return str(value.resolve()) if value else None


def _listed(value: Iterable[Any], _: Mapping[str, Any]) -> list[Any]:
    return list(value)


OPTIONS: tuple[Flag, ...] = (
    Flag(("cases",), "cases", type=click.Path(path_type=Path),
         value=lambda cases, _: [str(c.resolve()) for c in cases]),
    Flag(("--run", "name"), "name",
         "Name of the run (or of the run to resume); without it, a new run is named by the "
         "time and the git revision (printed).", again=True, default=None),
    Flag(("--mode",), "mode", _modes, type=Registered(MODES.names), default="sandbox"),
    Flag(("--agent",), "agent.entry",
         "The agent, module:function (the modes that run it: offline, sandbox, record)."),
    Flag(("--agent-cmd", "agent_cmd"), "agent.command",
         "Or the agent as a program, split as a shell would: instruction on stdin, answer on "
         "stdout, the LLM and tools' addresses in its environment (OPENAI_BASE_URL, "
         "REPLAY_MCP_URL).", value=agent_command),
    Flag(("--isolation",), "agent.isolation",
         "Where the agent runs: process, in a process of its own inside walls (bubblewrap: "
         "its own network with only the trial's endpoints, its own processes, a read-only "
         "filesystem), for --agent and --agent-cmd alike; none, a program as a plain child and "
         "a Python agent in this process; auto, process for sandbox where this machine can "
         "(said when it cannot), none for the other modes.",
         type=click.Choice(["auto", "none", "process"]), default="auto"),
    Flag(("--trial-timeout",), "agent.timeout",
         "Seconds the agent may run in a trial, wherever it runs; past it, a program or "
         "walled agent is stopped, an in-process async agent cancelled, a sync one left behind "
         "(its later tool and LLM calls refused), and the trial is an error (guard timeout).",
         type=click.FloatRange(min=0, min_open=True)),
    Flag(("--trial-memory",), "agent.memory_mb",
         "Megabytes an agent in a process of its own (--agent-cmd, or --isolation process) "
         "may hold (resident, its processes together; walled, with what it stores in its "
         "private /tmp, /dev/shm...); past it, it is stopped and the trial is an error (guard "
         "memory).", type=click.IntRange(min=1)),
    Flag(("--trial-pids",), "agent.pids",
         "Processes and threads a walled agent (--isolation process) may run at once; at "
         "it, no more start, it is stopped and the trial is an error (guard pids).",
         type=click.IntRange(min=2)),
    Flag(("--max-llm-tokens",), "agent.max_llm_tokens",
         "Input+output tokens (as the LLM reports them) a trial's LLM calls may use; past "
         "it, the trial is an error (guard llm_tokens) and its next LLM request is refused "
         "(HTTP 403). A reply without usage cannot be counted (the cassette says so).",
         type=click.IntRange(min=1)),
    Flag(("--max-tool-result-chars",), "agent.max_tool_result_chars",
         "Characters (as JSON) of a tool result the agent may be given; a longer one is "
         "an error of that call instead, and the trial is an error (guard tool_result_chars).",
         type=click.IntRange(min=1)),
    Flag(("--tools",), "agent.tools",
         "Tool factory module:function taking the world's connection."),
    Flag(("--trials", "-k"), "trials", "Trials per case (review: one per recorded cassette).",
         type=click.IntRange(min=1)),
    Flag(("--llm",), "llm.source", _llm, type=click.Choice(["live", "frozen"])),
    Flag(("--llm-url",), "llm.url", "OpenAI-compatible base URL for a live LLM.", again=True),
    Flag(("--cassettes",), "cassettes", "Recorded cassettes (review, offline).",
         type=click.Path(path_type=Path), value=_path),
    Flag(("--model",), "agent.model", "Model id for the agent."),
    Flag(("--set", "sets"), "agent.settings", "key=value settings for the agent (repeatable).",
         multiple=True, value=settings_pairs, again=True),
    Flag(("--concurrency", "-j"), "executor.concurrency", "Trials in flight, over all workers."),
    Flag(("--executor",), "executor.kind",
         "Where trials run: this machine, a Ray cluster or a Dask cluster.",
         type=Registered(BACKENDS.names)),
    Flag(("--workers",), "executor.workers",
         "Worker processes (local: 1 runs trials in this process), Ray actors or Dask workers.",
         type=click.IntRange(min=1)),
    Flag(("--ray-address",), "executor.ray_address",
         "Ray cluster to join [default: RAY_ADDRESS, else a local one]."),
    Flag(("--ship",), "executor.ship",
         "Folder with the agent's code, shipped to Ray workers (their working directory).",
         type=click.Path(exists=True, file_okay=False, path_type=Path), value=_path),
    Flag(("--dask-address",), "executor.dask_address",
         "Dask scheduler to use [default: a local cluster]."),
    Flag(("--store",), None, type=click.Path(path_type=Path), default=DEFAULT_PATH),
    Flag(("--resume",), None, "Finish an interrupted run named by --run.", is_flag=True),
    Flag(("--price", "prices"), "llm.prices",
         "MODEL=IN:OUT, USD per million input/output tokens: trial costs and max_cost.",
         multiple=True, value=prices),
    Flag(("--allow-env",), "agent.allow_env",
         "Let the sandboxed agent see this secret-like environment variable (repeatable).",
         multiple=True, value=_listed),
    Flag(("--secret-env",), "redaction.secret_env",
         "Scrub this environment variable's value from everything the run writes (repeatable; "
         "credentials in headers and URLs, --allow-env values and secret-named --set values are "
         "scrubbed without it).", multiple=True, metavar="NAME", value=_listed),
    Flag(("--redact-tool", "redact_tools"), "redaction.tool_paths",
         "Replace the value at this path of tool calls in the cassettes, e.g. "
         "'*.args.card_number' or 'get_customer.result.ssn' (repeatable).",
         multiple=True, metavar="TOOL.args|result.PATH", value=_listed),
    Flag(("--allow-host", "allow_hosts"), "agent.allow_hosts",
         "Let the sandboxed agent reach this host (port 443 unless given; repeatable): "
         "anything else it tries is refused and fails the trial as a sandbox violation.",
         multiple=True, metavar="HOST[:PORT]",
         value=lambda hosts, _: [allowed_host(h) for h in hosts]),
    Flag(("--mcp-server", "mcp_servers"), "agent.mcp_servers",
         "A third-party MCP server the agent reaches as env.mcp_servers[NAME]: a command "
         "(split like a shell; {world} is the trial's world as a SQLite file) or an http(s) "
         "URL (repeatable).", multiple=True, metavar="NAME=COMMAND|URL",
         value=lambda servers, given: mcp_servers(servers, given["mcp_envs"]), again=True),
    Flag(("--mcp-env", "mcp_envs"), "agent.mcp_servers.env",
         "An environment variable for server NAME's command (repeatable; stored with the run).",
         multiple=True, metavar="NAME:KEY=VALUE", again=True),
    Flag(("--ignore-host", "ignore_hosts"), "llm.ignore_hosts",
         "Never record calls to this host (or path prefix); offline and in the sandbox they get "
         "an empty success (repeatable; added to the default list of the SDKs' tracing "
         "endpoints).", multiple=True, metavar="HOST[/PATH]", value=_listed),
    Flag(("--no-llm-check",), "llm.check",
         "Do not check that --llm-url accepts a connection before the run (an agent that "
         "never calls its LLM); checked, one that does not stops the run (exit 3).",
         is_flag=True, value=lambda no, _: not no),
    Flag(("--ignore-field", "ignore_fields"), "llm.ignore_fields",
         "A request field that changes on every run, left out when requests are matched to "
         "their recording (offline, a frozen LLM): a JSON body path (metadata.user_id, "
         "messages.*.id), query:NAME, header:NAME, or a preset (@claude-code, @request-ids, "
         "@stream-options); added to the cases' ignore_fields (repeatable).",
         multiple=True, metavar="FIELD", value=_listed),
    Flag(("--no-default-ignore",), "llm.default_ignore",
         "Record the SDKs' tracing endpoints too (see recorder.DEFAULT_IGNORE_HOSTS).",
         is_flag=True, value=lambda no, _: not no),
    Flag(("--grader", "graders"), "graders", _graders, multiple=True,
         metavar="NAME|MODULE:NAME", value=_listed),
    Flag(("--judge-url",), "judge.url",
         "OpenAI-compatible base URL of the LLM judge (rubrics).", again=True),
    Flag(("--judge-model",), "judge.model", "Model id of the LLM judge."),
    Flag(("--judge-timeout",), "judge.timeout",
         "Seconds a judge call may take in all (every byte of its answer); past it the "
         "grade is unknown."),
    Flag(("--judge-min-labels",), "judge.min_labels",
         "Human labels a judge needs before its grades count (0: they count at once).",
         type=click.IntRange(min=0)),
    Flag(("--judge-min-agreement",), "judge.min_agreement",
         "Agreement with human labels a judge must exceed before its grades count.",
         type=click.FloatRange(0, 1)),
    Flag(("--no-judge",), "judge.enabled", "Skip rubric grading.", is_flag=True,
         value=lambda no, _: not no),
    Flag(("--fault", "faults"), "faults.faults",
         "Inject `KIND[:TOOL][@RATE]` in offline/sandbox trials, e.g. duplicate:issue_refund, "
         "llm_429@0.3 (repeatable; kinds: timeout raise http_5xx duplicate truncated stale "
         "malformed_json llm_429 llm_5xx).", multiple=True,
         value=lambda faults, _: [str(f) for f in parse_faults(faults)]),
    Flag(("--fault-seed",), "faults.seed", "Seed of the fault draws."),
    Flag(("--user", "user_source"), "user.source",
         "Multi-turn cases: a live simulated user, the one in the cassettes, or `agent`: the "
         "agent simulates its own user (its turns are LLM traffic, frozen with the rest) and "
         "the case's user: section is not played.",
         type=click.Choice(["live", "frozen", "agent"])),
    Flag(("--user-url",), "user.url",
         "OpenAI-compatible base URL of the simulated user [default: --llm-url].", again=True),
    Flag(("--user-model",), "user.model", "Model playing the user."),
    Flag(("--user-timeout",), "user.timeout",
         "Seconds a simulated user's answer may take in all; past it the user has failed."),
    Flag(("--stub-llm",), None,
         "Start the stub LLM for this run on a free port and point --llm-url at it, stopped "
         "after: a JSON script, a MODULE:FUNCTION making a policy (replay stub-llm --help), "
         "or `echo`. (--resume takes it again.)",
         metavar="SCRIPT.json|MOD:FN|echo", default=None),
    Flag(("--measure",), None,
         "A measurement run, whose point is the numbers: exit 0 whatever the verdicts "
         "(still 2 on bad input, 130 on Ctrl-C).", is_flag=True),
    Flag(("--json", "as_json"), None,
         "At the end, print one JSON object on stdout and nothing else there: the report "
         "(`replay report --json`) with the store and the exit status; progress goes to "
         "stderr.", is_flag=True),
)  # fmt: skip
"""In ``--help``'s order."""

AGAIN = tuple(flag.setting for flag in OPTIONS if flag.again and flag.setting in SETTINGS)
"""The settings ``--resume`` takes again (the run's name, and what holds secrets)."""


def options(command: Callable[..., Any]) -> Callable[..., Any]:
    """Decorate ``command`` with every option of ``OPTIONS`` (the first listed, first shown)."""
    for flag in reversed(OPTIONS):
        command = flag.decorator()(command)
    return command


def settings(given: Mapping[str, Any], only: Iterable[str] | None = None) -> dict[str, Any]:
    """The settings (``RunSpec.from_settings``) that the options ``given`` fill, by name.

    ``only``: those settings alone. An option folded into another's setting
    (``--mcp-env`` into ``agent.mcp_servers``) fills none of its own.
    """
    wanted = None if only is None else set(only)
    out = {}
    for flag in OPTIONS:
        if flag.setting not in SETTINGS or (wanted is not None and flag.setting not in wanted):
            continue
        value = given[flag.param]
        out[flag.setting] = flag.value(value, given) if flag.value else value
    return out


_BY_SETTING = {flag.setting: flag for flag in OPTIONS if flag.setting}
_NAMED = re.compile(r"`([a-z_]+(?:\.[a-z_]+)*)(?:=([^`\s]+))?`")


def flags(message: str) -> str:
    """``message`` with the settings it names as the options that fill them.

    ```agent.entry``` is ``--agent``, ```user.source=live``` ``--user live``; a name
    that no option fills is left as written.
    """

    def option(match: re.Match[str]) -> str:
        flag = _BY_SETTING.get(match[1])
        if flag is None:
            return match[0]
        name = flag.decls[0]
        return name if flag.is_flag or match[2] is None else f"{name} {match[2]}"

    return _NAMED.sub(option, message)
