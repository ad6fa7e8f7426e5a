"""What defines a run, grouped by what it sets: ``RunSpec`` and its settings.

A run's spec is stored with it (``Store.start_run``) so that ``--resume``
continues it exactly; it carries its version, and ``RunSpec.from_stored``
reads a spec stored by an earlier version (the flat spec of version 1, the
version 2 spec without MCP servers, the version 3 spec without caps) or
refuses one from a later version, saying so.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import asdict, dataclass, field, fields
from typing import Any, Literal

from recorder import ConfigError

from ..channels._mcp_proxy import McpServer
from ..modes import Limits
from ..results._calibration import MIN_AGREEMENT, MIN_LABELS

SPEC_VERSION = 4
"""1: one flat record of 30 fields; 2: grouped into agent, LLM, judge, user, faults, executor;
3: the agent's third-party MCP servers (``agent.mcp_servers``; none in a version 2 spec);
4: caps on a trial's LLM tokens and tool results (``agent.max_llm_tokens``,
``agent.max_tool_result_chars``), ``agent.timeout`` holding in-process agents too, and the
hosts a sandboxed agent may reach (``agent.allow_hosts``); none in a version 3 spec."""


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
    version: int = SPEC_VERSION
    """The spec's format (``SPEC_VERSION``), stored with it."""

    def to_stored(self) -> dict[str, Any]:
        """As stored with the run (JSON-ready)."""
        return asdict(self)

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


_GROUPS: dict[str, Any] = {
    "agent": AgentSettings,
    "llm": LlmSettings,
    "judge": JudgeSettings,
    "user": UserSettings,
    "faults": FaultSettings,
    "executor": ExecutorSettings,
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
