"""What defines a run, grouped by what it sets: ``RunSpec`` and its settings.

A run's spec is stored with it (``Store.start_run``) so that resuming it
continues it exactly; it carries its version, and ``RunSpec.from_stored``
reads a spec stored by an earlier version (the flat spec of version 1, the
version 2 spec without MCP servers, the version 3 spec without caps) or
refuses one from a later version, saying so.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import MISSING, asdict, dataclass, field, fields, replace
from typing import Any, Literal

from recorder import PLACEHOLDER, ConfigError, Redaction, Secrets, secret_named

from ..agents import allowed_host
from ..cases import check_name
from ..mcp import McpServer
from ..modes import Limits
from ..results import MIN_AGREEMENT, MIN_LABELS
from ._stored import (
    grouped,
    hide_server,
    hide_settings,
    hide_url,
    secret_args,
    stored_server,
)

SPEC_VERSION = 5
"""1: one flat record of 30 fields; 2: grouped into agent, LLM, judge, user, faults, executor;
3: the agent's third-party MCP servers (``agent.mcp_servers``; none in a version 2 spec);
4: caps on a trial's LLM tokens and tool results (``agent.max_llm_tokens``,
``agent.max_tool_result_chars``), ``agent.timeout`` holding in-process agents too, and the
hosts a sandboxed agent may reach (``agent.allow_hosts``); none in a version 3 spec;
5: what the trials' cassettes redact (``redaction``) and the user's deadline
(``user.timeout``), stored without its secrets (``RunSpec.to_stored``); a version 4 spec
redacts the defaults and gives the user 60 s."""


MEMORY_MB = 2048
"""``--trial-memory``'s default: megabytes an agent in a process of its own may hold."""
PIDS = 512
"""``--trial-pids``'s default: processes and threads a walled agent may run at once."""


@dataclass(frozen=True)
class AgentSettings:
    """The agent under test and what it is given."""

    entry: str | None = None
    """``module:function`` of the agent (modes that run it)."""
    tools: str | None = None
    """``module:function`` returning the tools for a world connection."""
    model: str | None = None
    """The model id the agent is asked to use (``env.model``)."""
    settings: dict[str, Any] = field(default_factory=dict)
    """Everything else it is given (``env.settings``)."""
    allow_env: list[str] = field(default_factory=list)
    """Environment variables named like secrets it may still see (sandbox)."""
    mcp_servers: dict[str, McpServer] = field(default_factory=dict)
    """Third-party MCP servers it uses, by name (``env.mcp_servers``); a stored
    server (its fields as a dict) is read back as an ``McpServer``."""
    command: list[str] | None = None
    """Or the agent as a program: instruction on stdin, answer on stdout, the trial's
    addresses in its environment (``replay.AgentCommand``)."""
    isolation: Literal["auto", "none", "process"] = "none"
    """Where the agent runs: ``process``, inside walls (its own network, processes and
    a read-only filesystem); ``none``, a program as a plain child, a Python agent in
    the harness's process; ``auto``, ``process`` for a mode that asks for walls where
    this machine can build them (``execute`` warns when it cannot), else ``none``."""
    timeout: float = 600.0
    """Seconds the agent may run in a trial, wherever it runs."""
    memory_mb: int | None = MEMORY_MB
    """Megabytes an agent in a process of its own may hold, its processes together (and,
    walled, what it stores in its private ``/tmp``, ``/dev/shm``...); None: no cap."""
    pids: int | None = PIDS
    """Processes and threads a walled agent may run at once; None: no limit."""
    allow_hosts: list[tuple[str, int]] = field(default_factory=list)
    """``(host, port)`` a sandboxed agent may reach besides its endpoints
    (``replay.agents.allowed_host`` reads ``HOST[:PORT]``); stored as ``host:port``."""
    max_llm_tokens: int | None = None
    """Input plus output tokens a trial's LLM calls may use."""
    max_tool_result_chars: int | None = None
    """Characters of one tool result, as JSON, the agent may be given."""

    def limits(self) -> Limits:
        """What each trial may use (``TrialPlan.limits``)."""
        return Limits(self.timeout, self.max_llm_tokens, self.max_tool_result_chars)

    @property
    def resolved_isolation(self) -> Literal["none", "process"]:
        """``isolation`` once ``auto`` is chosen (``execute`` chooses before any trial runs).

        Raises:
            ValueError: It is still ``auto``.
        """
        if self.isolation == "auto":
            raise ValueError("isolation 'auto' is chosen by execute (replay.agents.isolation)")
        return self.isolation

    def __post_init__(self) -> None:
        servers = {name: _server(given) for name, given in self.mcp_servers.items()}
        object.__setattr__(self, "mcp_servers", servers)


def _server(given: McpServer | Mapping[str, Any]) -> McpServer:
    """The server in one form (sequences as tuples), whether given or stored, so specs compare."""
    stored = stored_server(given) if isinstance(given, McpServer) else dict(given)
    values: dict[str, Any] = {k: tuple(v) if isinstance(v, list) else v for k, v in stored.items()}
    return McpServer(**values)


@dataclass(frozen=True)
class LlmSettings:
    """Where the agent's LLM answers come from, and what its traffic costs."""

    source: Literal["live", "frozen"] | None = None
    """``live`` (``url``) or ``frozen`` (the cassettes'); None: the mode's default."""
    url: str | None = None
    """The OpenAI-compatible endpoint the agent talks to when the LLM is live."""
    ignore_hosts: list[str] = field(default_factory=list)
    """Hosts (``host`` or ``host/path``) the trials' cassettes ignore, besides the default list."""
    default_ignore: bool = True
    """Ignore the default list of tracing endpoints (``recorder.DEFAULT_IGNORE_HOSTS``)."""
    prices: dict[str, tuple[float, float]] = field(default_factory=dict)
    """USD per million input and output tokens, by model: for costs and max_cost."""
    check: bool = True
    """Before a run with a live LLM, check once that ``url`` accepts a connection."""
    ignore_fields: list[str] = field(default_factory=list)
    """Request fields left out when the trials' requests are matched to their recordings,
    besides each case's ``ignore_fields`` (see ``replay.Case.ignore_fields``)."""


@dataclass(frozen=True)
class JudgeSettings:
    """The LLM judge that grades the cases' rubrics."""

    url: str | None = None
    """Its OpenAI-compatible endpoint (None: no judge)."""
    model: str | None = None
    timeout: float = 60.0
    min_labels: int = MIN_LABELS
    """Human labels a judge needs before its grades count (0: they count at once)."""
    min_agreement: float = MIN_AGREEMENT
    """Agreement with those labels a judge must exceed before its grades count."""
    enabled: bool = True
    """False: skip rubric grading even where cases have a rubric."""


@dataclass(frozen=True)
class UserSettings:
    """The simulated user of multi-turn cases."""

    source: Literal["live", "frozen", "agent"] = "live"
    """A live simulated user, one answering from the cassettes, or ``agent``: the agent
    plays its own (tau2's orchestrator, say), given the case's ``instruction``; its user's
    turns are LLM traffic like the rest, recorded and frozen with it."""
    url: str | None = None
    """Its OpenAI-compatible endpoint (default: the LLM's ``url``)."""
    model: str = "user-sim"
    timeout: float = 60.0
    """Seconds each of its answers may take in all."""


@dataclass(frozen=True)
class FaultSettings:
    """Faults injected in every case's trials, after the case's own."""

    faults: list[str] = field(default_factory=list)
    """``KIND[:TOOL][@RATE]`` each."""
    seed: int = 0
    """Seeds each trial's fault draws (with the case id and trial index)."""


@dataclass(frozen=True)
class ExecutorSettings:
    """Where and how many trials run (see ``replay.runs._backend``)."""

    kind: str = "local"
    """A registered backend (``local``, ``ray``, ``dask``, or an installed plugin's)."""
    workers: int = 1
    """Worker processes (local), Ray actors or Dask workers; 1 locally: this process."""
    concurrency: int = 1
    """Trials in flight at once, over all workers."""
    ray_address: str | None = None
    """A Ray cluster to join (default: ``RAY_ADDRESS``, else a local one is started)."""
    ship: str | None = None
    """A folder with the agent's code, shipped to Ray workers as their working directory."""
    dask_address: str | None = None
    """A Dask scheduler to use (default: a local cluster)."""


@dataclass(frozen=True)
class RedactionSettings:
    """What the trials' cassettes redact besides the defaults (see ``recorder.Redaction``)."""

    tool_paths: list[str] = field(default_factory=list)
    """``TOOL.args.PATH`` or ``TOOL.result.PATH`` replaced in tool calls."""
    secret_env: list[str] = field(default_factory=list)
    """Environment variables whose values are scrubbed from everything."""

    def redaction(self) -> Redaction:
        """The recorder's redaction (raises ``ConfigError`` for a path that is not one)."""
        return Redaction(tool_paths=tuple(self.tool_paths))


@dataclass(frozen=True)
class RunSpec:
    """Everything that defines a run (stored with it, so it can be resumed)."""

    name: str
    """The run's name, a name and not a path (``replay.cases.check_name``)."""
    cases: list[str]
    """Case file paths."""
    mode: str
    """A registered mode's name (``replay.modes.REGISTRY``)."""
    trials: int = 1
    """Trials per case (modes whose trials are the recorded ones: one per cassette)."""
    cassettes: str | None = None
    """Directory of recorded cassettes (review, offline, frozen channels), found by case id."""
    out: str | None = None
    """Directory for the trials' cassettes (default: beside the store)."""
    graders: list[str] = field(default_factory=list)
    """Graders added to every case's (registered names, or ``MODULE:NAME``)."""
    agent: AgentSettings = field(default_factory=AgentSettings)
    llm: LlmSettings = field(default_factory=LlmSettings)
    judge: JudgeSettings = field(default_factory=JudgeSettings)
    user: UserSettings = field(default_factory=UserSettings)
    faults: FaultSettings = field(default_factory=FaultSettings)
    executor: ExecutorSettings = field(default_factory=ExecutorSettings)
    redaction: RedactionSettings = field(default_factory=RedactionSettings)
    version: int = SPEC_VERSION
    """The spec's format (``SPEC_VERSION``), stored with it."""

    def __post_init__(self) -> None:
        # A name, not a path: its cassettes' folder is named after it (``check_name``).
        check_name(self.name, "`name`")

    def to_stored(self) -> dict[str, Any]:
        """As stored with the run (JSON-ready), every secret in it replaced by ``[REDACTED]``.

        Secrets are what the run's cassettes scrub (``secrets``): URL credentials
        and secret query values of the LLM, judge, user and MCP server URLs,
        ``agent.settings`` and MCP server variables that look like secrets, values
        of secret options in an MCP server's command (``recorder.secret_named``:
        by the name, or a URL with a password as the value). Resuming the
        run takes them again (``restored``). Allowed hosts are stored as ``host:port``.
        """
        stored = asdict(self)
        agent, seen = stored["agent"], Secrets(self.secrets())
        for group, key in (("llm", "url"), ("judge", "url"), ("user", "url")):
            stored[group][key] = hide_url(stored[group][key])
        agent["settings"] = hide_settings(agent["settings"])
        agent["mcp_servers"] = {n: hide_server(v) for n, v in agent["mcp_servers"].items()}
        agent["allow_hosts"] = [f"{host}:{port}" for host, port in self.agent.allow_hosts]
        return dict(seen.scrub_value(stored))

    def secrets(self, environ: Mapping[str, str] | None = None) -> list[str]:
        """The values every cassette of the run scrubs (``recorder.record(secrets=)``).

        Those of the stored spec hides, and the values of the ``agent.allow_env`` and
        ``redaction.secret_env`` variables in ``environ`` (default: this process's).
        """
        environ = os.environ if environ is None else environ
        seen = Secrets()
        urls = [self.llm.url, self.judge.url, self.user.url]
        urls += [s.url for s in self.agent.mcp_servers.values()]
        for url in urls:
            if url:
                Redaction().redact_url(url, seen)
        values = [str(v) for k, v in self.agent.settings.items() if secret_named(k, v)]
        for server in self.agent.mcp_servers.values():
            values += [v for k, v in server.env.items() if secret_named(k, v)]
            values += secret_args(server.command)
        names = [*self.agent.allow_env, *self.redaction.secret_env]
        values += [environ[name] for name in names if environ.get(name)]
        for value in values:
            if value and value != PLACEHOLDER:
                seen.add(value)
        return sorted(seen.values())

    def missing_secrets(self) -> list[str]:
        """The settings whose secrets a spec read back lacks (``to_stored`` hid them).

        Each as a message names it: ```llm.url```, ```agent.settings` api_key=...``.
        """
        missing = [
            f"`{group}.url`"
            for group, url in (("llm", self.llm.url), ("judge", self.judge.url))
            if url and PLACEHOLDER in url
        ]
        if self.user.url and PLACEHOLDER in self.user.url:
            missing.append("`user.url`")
        hidden = [k for k, v in self.agent.settings.items() if v == PLACEHOLDER]
        missing += [f"`agent.settings` {k}=..." for k in hidden]
        for name, server in self.agent.mcp_servers.items():
            servers = f"`agent.mcp_servers` {name}=..."
            envs = [k for k, v in server.env.items() if v == PLACEHOLDER]
            missing += [f"{servers} `agent.mcp_servers.env` {name}:{k}=..." for k in envs]
            if PLACEHOLDER in (server.url or "") or any(PLACEHOLDER in a for a in server.command):
                missing.append(servers)
        return missing

    def restored(
        self,
        *,
        llm_url: str | None = None,
        judge_url: str | None = None,
        user_url: str | None = None,
        settings: Mapping[str, Any] | None = None,
        mcp_servers: Mapping[str, McpServer] | None = None,
    ) -> RunSpec:
        """This spec (read back from the store) with the secrets given again, to resume it.

        Each value given must be the one the run was started with, secrets aside.

        Raises:
            ConfigError: A value differs from the run's, or a secret is still missing.
        """
        spec = self
        for given, group in ((llm_url, "llm"), (judge_url, "judge"), (user_url, "user")):
            if given is None:
                continue
            held = getattr(spec, group)
            if hide_url(given) != held.url:
                raise ConfigError(f"`{group}.url` is not the run's ({held.url}): give the same URL")
            spec = replace(spec, **{group: replace(held, url=given)})
        agent = spec.agent
        if settings:
            merged = dict(agent.settings)
            for key, value in settings.items():
                if hide_settings({key: value}) != {key: merged.get(key)}:
                    raise ConfigError(
                        f"`agent.settings` {key} is not the run's: give the value it started with"
                    )
                merged[key] = value
            agent = replace(agent, settings=merged)
        if mcp_servers:
            servers = dict(agent.mcp_servers)
            for name, server in mcp_servers.items():
                if name not in servers or hide_server(server) != hide_server(servers[name]):
                    raise ConfigError(
                        f"MCP server {name!r} is not the run's: give it as it started"
                    )
                servers[name] = server
            agent = replace(agent, mcp_servers=servers)
        spec = replace(spec, agent=agent)
        if missing := spec.missing_secrets():
            raise ConfigError(
                f"run {spec.name!r} was started with secrets that are not stored: give "
                + ", ".join(missing)
                + " again to resume it"
            )
        return spec

    @classmethod
    def from_stored(cls, data: dict[str, Any]) -> RunSpec:
        """The spec stored with a run, of this version or an earlier one.

        Raises:
            ConfigError: It is from a later version, or not a spec this version can read.
        """
        version = data.get("version", 1)
        if not isinstance(version, int) or version > SPEC_VERSION:
            raise ConfigError(
                f"run {data.get('name')!r} was started by a newer agent-replay (spec version "
                f"{version}; this one reads up to {SPEC_VERSION}): resume it with that version"
            )
        if version == 1:
            data = grouped(data, _GROUPS)
        groups = {name: dict(data.get(name) or {}) for name in _GROUPS}
        prices = groups["llm"].get("prices")
        if isinstance(prices, dict):  # JSON made the price pairs lists
            groups["llm"]["prices"] = {m: tuple(p) for m, p in prices.items()}
        hosts = groups["agent"].get("allow_hosts")
        if isinstance(hosts, list):  # stored as host:port
            groups["agent"]["allow_hosts"] = [allowed_host(h) for h in hosts]
        try:
            built = {name: _GROUPS[name](**values) for name, values in groups.items()}
            return cls(**{**data, **built, "version": SPEC_VERSION})
        except TypeError as exc:
            raise ConfigError(
                f"the stored spec of run {data.get('name')!r} is unreadable: {exc}"
            ) from None

    @classmethod
    def from_settings(cls, settings: Mapping[str, Any]) -> RunSpec:
        """A spec from settings by name (``SETTINGS``: ``name``, ``agent.entry``...).

        Those not given take their defaults (``name``, ``cases`` and ``mode`` have none).

        Raises:
            ValueError: A name is not a setting.
        """
        top: dict[str, Any] = {}
        groups: dict[str, dict[str, Any]] = {name: {} for name in _GROUPS}
        for name, value in settings.items():
            if name not in SETTINGS:
                raise ValueError(f"no setting {name!r}; the settings are {', '.join(SETTINGS)}")
            group, dot, key = name.partition(".")
            if dot:
                groups[group][key] = value
            else:
                top[name] = value
        return cls(**top, **{name: _GROUPS[name](**values) for name, values in groups.items()})


_GROUPS: dict[str, Any] = {
    "agent": AgentSettings,
    "llm": LlmSettings,
    "judge": JudgeSettings,
    "user": UserSettings,
    "faults": FaultSettings,
    "executor": ExecutorSettings,
    "redaction": RedactionSettings,
}


def _defaults(cls: Any, prefix: str = "") -> dict[str, Any]:
    found = {}
    for f in fields(cls):
        if not prefix and f.name in _GROUPS:
            found.update(_defaults(_GROUPS[f.name], f"{f.name}."))
        elif f.name != "version":
            factory = f.default_factory
            found[prefix + f.name] = f.default if factory is MISSING else factory()
    return found


SETTINGS: dict[str, Any] = _defaults(RunSpec)
"""Every setting of a spec by name (``trials``, ``agent.entry``...), with its default
(``dataclasses.MISSING``: none). Errors name settings so, in backticks: ```agent.entry```."""
