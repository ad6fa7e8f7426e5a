"""What defines a run, grouped by what it sets: ``RunSpec`` and its settings.

A run's spec is stored with it (``Store.start_run``) so that ``--resume``
continues it exactly; it carries its version, and ``RunSpec.from_stored``
reads a spec stored by an earlier version (the flat spec of version 1, the
version 2 spec without MCP servers, the version 3 spec without caps) or
refuses one from a later version, saying so.
"""

from __future__ import annotations

import os
import re
from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass, field, fields, replace
from typing import Any, Literal

from recorder import PLACEHOLDER, ConfigError, Redaction, Secrets

from ..mcp import McpServer
from ..modes import Limits
from ..results import MIN_AGREEMENT, MIN_LABELS
from ..surroundings import SECRET_WORDS

SPEC_VERSION = 5
"""1: one flat record of 30 fields; 2: grouped into agent, LLM, judge, user, faults, executor;
3: the agent's third-party MCP servers (``agent.mcp_servers``; none in a version 2 spec);
4: caps on a trial's LLM tokens and tool results (``agent.max_llm_tokens``,
``agent.max_tool_result_chars``), ``agent.timeout`` holding in-process agents too, and the
hosts a sandboxed agent may reach (``agent.allow_hosts``); none in a version 3 spec;
5: what the trials' cassettes redact (``redaction``) and the user's deadline
(``user.timeout``), stored without its secrets (``RunSpec.to_stored``); a version 4 spec
redacts the defaults and gives the user 60 s."""


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
    """Everything else it is given (``--set``: ``env.settings``)."""
    allow_env: list[str] = field(default_factory=list)
    """Environment variables named like secrets it may still see (sandbox)."""
    mcp_servers: dict[str, McpServer] = field(default_factory=dict)
    """Third-party MCP servers it uses, by name (``env.mcp_servers``); a stored
    server (its fields as a dict) is read back as an ``McpServer``."""
    command: list[str] | None = None
    """Or the agent as a program (``--agent-cmd``): instruction on stdin, answer on
    stdout, the trial's addresses in its environment (``replay.AgentCommand``)."""
    isolation: Literal["none", "process"] = "none"
    """Where the agent runs: ``process``, inside walls (its own network, processes and
    a read-only filesystem); ``none``, a program as a plain child, a Python agent in
    the harness's process."""
    timeout: float = 600.0
    """Seconds the agent may run in a trial, wherever it runs (``--trial-timeout``)."""
    memory_mb: int | None = None
    """Megabytes an agent in a process of its own may hold, its processes together
    (``--trial-memory``)."""
    allow_hosts: list[str] = field(default_factory=list)
    """``host:port`` a sandboxed agent may reach besides its endpoints (``--allow-host``)."""
    max_llm_tokens: int | None = None
    """Input plus output tokens a trial's LLM calls may use (``--max-llm-tokens``)."""
    max_tool_result_chars: int | None = None
    """Characters of one tool result, as JSON, the agent may be given
    (``--max-tool-result-chars``)."""

    def limits(self) -> Limits:
        """What each trial may use (``TrialPlan.limits``)."""
        return Limits(self.timeout, self.max_llm_tokens, self.max_tool_result_chars)

    def __post_init__(self) -> None:
        servers = {name: _server(given) for name, given in self.mcp_servers.items()}
        object.__setattr__(self, "mcp_servers", servers)


def stored_server(server: McpServer) -> dict[str, Any]:
    """A server's fields, JSON-ready (sequences as lists, mappings as dicts)."""
    return {f.name: _plain(getattr(server, f.name)) for f in fields(server)}


def _plain(value: Any) -> Any:
    if isinstance(value, Mapping):
        return {str(k): _plain(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_plain(v) for v in value]
    return value


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
    """False: skip rubric grading even where cases have a rubric (``--no-judge``)."""


@dataclass(frozen=True)
class UserSettings:
    """The simulated user of multi-turn cases."""

    source: Literal["live", "frozen"] = "live"
    """A live simulated user, or one answering from the cassettes."""
    url: str | None = None
    """Its OpenAI-compatible endpoint (default: the LLM's ``url``)."""
    model: str = "user-sim"
    timeout: float = 60.0
    """Seconds each of its answers may take in all (``--user-timeout``)."""


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

    kind: Literal["local", "ray", "dask"] = "local"
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
    """``TOOL.args.PATH`` or ``TOOL.result.PATH`` replaced in tool calls (``--redact-tool``)."""
    secret_env: list[str] = field(default_factory=list)
    """Environment variables whose values are scrubbed from everything (``--secret-env``)."""

    def redaction(self) -> Redaction:
        """The recorder's redaction (raises ``ConfigError`` for a path that is not one)."""
        return Redaction(tool_paths=tuple(self.tool_paths))


@dataclass(frozen=True)
class RunSpec:
    """Everything that defines a run (stored with it, so it can be resumed)."""

    name: str
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

    def to_stored(self) -> dict[str, Any]:
        """As stored with the run (JSON-ready), every secret in it replaced by ``[REDACTED]``.

        Secrets are what the run's cassettes scrub (``secrets``): URL credentials
        and secret query values of the LLM, judge, user and MCP server URLs,
        settings (``--set``) and MCP server variables named like secrets, values
        following a secret-named option in an MCP server's command. ``--resume``
        takes them again from the command line (``restored``).
        """
        stored = asdict(self)
        agent, seen = stored["agent"], Secrets(self.secrets())
        for group, key in (("llm", "url"), ("judge", "url"), ("user", "url")):
            stored[group][key] = hide_url(stored[group][key])
        agent["settings"] = hide_settings(agent["settings"])
        agent["mcp_servers"] = {n: hide_server(v) for n, v in agent["mcp_servers"].items()}
        return dict(seen.scrub_value(stored))

    def secrets(self, environ: Mapping[str, str] | None = None) -> list[str]:
        """The values every cassette of the run scrubs (``recorder.record(secrets=)``).

        Those of the stored spec hides, and the values of the ``--allow-env`` and
        ``--secret-env`` variables in ``environ`` (default: this process's).
        """
        environ = os.environ if environ is None else environ
        seen = Secrets()
        urls = [self.llm.url, self.judge.url, self.user.url]
        urls += [s.url for s in self.agent.mcp_servers.values()]
        for url in urls:
            if url:
                Redaction().redact_url(url, seen)
        values = [str(v) for k, v in self.agent.settings.items() if secret_named(k)]
        for server in self.agent.mcp_servers.values():
            values += [v for k, v in server.env.items() if secret_named(k)]
            values += _secret_args(server.command)
        names = [*self.agent.allow_env, *self.redaction.secret_env]
        values += [environ[name] for name in names if environ.get(name)]
        for value in values:
            if value and value != PLACEHOLDER:
                seen.add(value)
        return sorted(seen.values())

    def missing_secrets(self) -> list[str]:
        """The options whose secrets a spec read back lacks (``to_stored`` hid them)."""
        missing = [
            f"--{group}-url"
            for group, url in (("llm", self.llm.url), ("judge", self.judge.url))
            if url and PLACEHOLDER in url
        ]
        if self.user.url and PLACEHOLDER in self.user.url:
            missing.append("--user-url")
        missing += [f"--set {k}=..." for k, v in self.agent.settings.items() if v == PLACEHOLDER]
        for name, server in self.agent.mcp_servers.items():
            hidden = [k for k, v in server.env.items() if v == PLACEHOLDER]
            missing += [f"--mcp-server {name}=... --mcp-env {name}:{k}=..." for k in hidden]
            if PLACEHOLDER in (server.url or "") or any(PLACEHOLDER in a for a in server.command):
                missing.append(f"--mcp-server {name}=...")
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
        """This spec (read back from the store) with the secrets given again for ``--resume``.

        Each value given must be the one the run was started with, secrets aside.

        Raises:
            ConfigError: A value differs from the run's, or a secret is still missing.
        """
        spec = self
        for option, given, group in (
            ("--llm-url", llm_url, "llm"),
            ("--judge-url", judge_url, "judge"),
            ("--user-url", user_url, "user"),
        ):
            if given is None:
                continue
            held = getattr(spec, group)
            if hide_url(given) != held.url:
                raise ConfigError(f"{option} is not the run's ({held.url}): give the same URL")
            spec = replace(spec, **{group: replace(held, url=given)})
        agent = spec.agent
        if settings:
            merged = dict(agent.settings)
            for key, value in settings.items():
                if hide_settings({key: value}) != {key: merged.get(key)}:
                    raise ConfigError(
                        f"--set {key} is not the run's: give the value it started with"
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
                + " again with --resume"
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
            data = _grouped(data)
        groups = {name: dict(data.get(name) or {}) for name in _GROUPS}
        prices = groups["llm"].get("prices")
        if isinstance(prices, dict):  # JSON made the price pairs lists
            groups["llm"]["prices"] = {m: tuple(p) for m, p in prices.items()}
        try:
            built = {name: _GROUPS[name](**values) for name, values in groups.items()}
            return cls(**{**data, **built, "version": SPEC_VERSION})
        except TypeError as exc:
            raise ConfigError(
                f"the stored spec of run {data.get('name')!r} is unreadable: {exc}"
            ) from None


def secret_named(name: str) -> bool:
    """Whether a setting, variable or option is named like a secret.

    One of its words is ``KEY``, ``TOKEN``, ``SECRET``, ``PASSWORD`` (or ``APIKEY``,
    ``PASSWD``...).

    Words, not substrings: ``api_key``, ``--auth-token``, ``githubToken`` are secrets;
    ``max_tokens`` and ``keyword`` are not.
    """
    spaced = re.sub(r"([a-z0-9])([A-Z])", r"\1_\2", name)
    words = {w.upper() for w in re.split(r"[^A-Za-z0-9]+", spaced) if w}
    return bool(words & _SECRET_NAME_WORDS)


_SECRET_NAME_WORDS = {*SECRET_WORDS, "APIKEY", "PASSWD", "PWD", "CREDENTIAL", "CREDENTIALS"}


def hide_url(url: str | None) -> str | None:
    """A URL as stored: credentials and secret query values replaced by ``[REDACTED]``.

    (Again on a URL it gave, it gives the same: a resumed run's URL compares equal.)
    """
    if not url:
        return url
    parts = _AUTHORITY.match(url)
    if parts is None:
        return Redaction().redact_url(url)
    head, authority, tail = parts.groups()
    clean = Redaction().redact_url(head + authority.rpartition("@")[2] + tail)
    if "@" not in authority:
        return clean
    return clean[: len(head)] + f"{PLACEHOLDER}@" + clean[len(head) :]


_AUTHORITY = re.compile(r"([a-zA-Z][a-zA-Z0-9+.-]*://)([^/?#]*)(.*)", re.S)


def hide_settings(settings: Mapping[str, Any]) -> dict[str, Any]:
    """Settings as stored: the values of secret-named keys replaced."""
    return {k: PLACEHOLDER if secret_named(k) else v for k, v in settings.items()}


def hide_server(server: McpServer | Mapping[str, Any]) -> dict[str, Any]:
    """An MCP server as stored: URL credentials, secret-named variables and options hidden."""
    stored = stored_server(server) if isinstance(server, McpServer) else dict(server)
    stored["url"] = hide_url(stored.get("url"))
    stored["env"] = hide_settings(stored.get("env") or {})
    stored["command"] = _hidden_args(list(stored.get("command") or ()))
    return stored


def _secret_args(command: Sequence[str]) -> list[str]:
    """Values of secret-named options in a command: ``--api-key X``, ``--token=X``."""
    return [value for _, value, _ in _secret_options(command) if value != PLACEHOLDER]


def _hidden_args(command: list[str]) -> list[str]:
    """A command with the values of its secret-named options replaced."""
    for at, _, inline in _secret_options(command):
        command[at] = f"{command[at].partition('=')[0]}={PLACEHOLDER}" if inline else PLACEHOLDER
    return command


def _secret_options(command: Sequence[str]) -> list[tuple[int, str, bool]]:
    """Each secret-named option's value: where it is, the value, and whether inline (``=``)."""
    found = []
    for i, arg in enumerate(command):
        name, eq, value = arg.partition("=")
        if not name.startswith("-") or not secret_named(name):
            continue
        if eq and value:
            found.append((i, value, True))
        elif not eq and i + 1 < len(command) and not command[i + 1].startswith("-"):
            found.append((i + 1, command[i + 1], False))
    return found


_GROUPS: dict[str, Any] = {
    "agent": AgentSettings,
    "llm": LlmSettings,
    "judge": JudgeSettings,
    "user": UserSettings,
    "faults": FaultSettings,
    "executor": ExecutorSettings,
    "redaction": RedactionSettings,
}

_FLAT = {  # version 1's field -> (group, field) in version 2
    "agent": ("agent", "entry"),
    "tools": ("agent", "tools"),
    "model": ("agent", "model"),
    "settings": ("agent", "settings"),
    "allow_env": ("agent", "allow_env"),
    "llm": ("llm", "source"),
    "llm_url": ("llm", "url"),
    "ignore_hosts": ("llm", "ignore_hosts"),
    "default_ignore": ("llm", "default_ignore"),
    "prices": ("llm", "prices"),
    "judge_url": ("judge", "url"),
    "judge_model": ("judge", "model"),
    "judge_timeout": ("judge", "timeout"),
    "judge_min_labels": ("judge", "min_labels"),
    "judge_min_agreement": ("judge", "min_agreement"),
    "user": ("user", "source"),
    "user_url": ("user", "url"),
    "user_model": ("user", "model"),
    "faults": ("faults", "faults"),
    "fault_seed": ("faults", "seed"),
    "executor": ("executor", "kind"),
    "workers": ("executor", "workers"),
    "concurrency": ("executor", "concurrency"),
    "ray_address": ("executor", "ray_address"),
    "ship": ("executor", "ship"),
    "dask_address": ("executor", "dask_address"),
}


def _grouped(flat: dict[str, Any]) -> dict[str, Any]:
    """A version-1 (flat) spec in version 2's groups."""
    out: dict[str, Any] = {name: {} for name in _GROUPS}
    for key, value in flat.items():
        if key == "no_judge":
            out["judge"]["enabled"] = not value
        elif key in _FLAT:
            group, name = _FLAT[key]
            out[group][name] = value
        else:
            out[key] = value
    return out
