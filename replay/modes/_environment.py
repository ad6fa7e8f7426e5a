"""What an agent gets besides its instruction: its tools, its LLM, its user."""

from __future__ import annotations

import inspect
import json
import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:  # (imported where used: a walled child imports this module alone)
    from recorder import Recording, Tool

    from ..mcp import McpProxy, McpTools
    from ..surroundings import FaultInjector, LlmProxy, UserChannel


@dataclass
class Environment:
    """What an agent gets besides its instruction.

    Attributes:
        tools: Tool specs in OpenAI ``tools`` format, to hand to the model.
        call_tool: ``call_tool(name, arguments) -> result`` (an awaitable for an async
            tool); raises what the tool raises (in offline mode, ``FixtureUnsupported``
            for an unseen call).
        llm_base_url: Base URL of the OpenAI-compatible endpoint to use.
        model: Model id to ask for (``--model``), or None for the agent's default.
        settings: Everything else given with ``--set`` (temperature, prompt...).
        api_key: Key to send; the endpoint under test decides whether it matters.
        user: The simulated user of a multi-turn case (its opening message is the
            instruction), or None.
        functions: The same tools as Python functions, for an agent framework to wrap
            with its own decorator (``function_tool(f)``, ``Agent(tools=[...])``,
            ``StructuredTool.from_function``): each has its tool's name, signature,
            annotations and docstring, and is a coroutine function where the tool
            is, so the framework builds the schema it always does. Calling one is
            ``call_tool`` (recorded; offline, answered from the cassette).
        mcp: The same tools over MCP: ``env.mcp.url`` is a streamable-HTTP MCP
            endpoint on 127.0.0.1 (started on first use, for this trial alone),
            for an agent that takes its tools from an MCP server
            (``MCPServerStreamableHttp(params={"url": env.mcp.url})``). A call
            there is ``call_tool`` too.
    """

    tools: list[dict[str, Any]]
    call_tool: Callable[[str, Mapping[str, Any]], Any]
    llm_base_url: str
    model: str | None = None
    settings: dict[str, Any] = field(default_factory=dict)
    api_key: str = "sk-replay"
    user: UserChannel | None = None
    """Multi-turn cases: ``user.say(text)`` returns the user's answer (None: it has ended)."""
    functions: Sequence[Callable[..., Any]] = field(default_factory=list)
    mcp: McpTools | None = None
    mcp_servers: Mapping[str, McpProxy] = field(default_factory=dict)
    """Third-party MCP servers by name, each behind the trial's recording proxy
    (``env.mcp_servers["sqlite"].url`` or ``.command``)."""
    llm_proxy: LlmProxy | None = None
    """The LLM for an agent in another process (``env.llm_proxy.url``): a recording
    proxy to ``llm_base_url``, what ``variables()`` gives as ``OPENAI_BASE_URL``."""
    _recording: Recording | None = field(default=None, init=False, repr=False, compare=False)
    """The trial's recording (the harness's: where walls report what they refused)."""

    def variables(self) -> dict[str, str]:
        """The same as environment variables, for an agent that runs as another program.

        An agent in another language (or any child process) is given these,
        and nothing of the harness's environment is implied:

        - ``OPENAI_BASE_URL``, ``OPENAI_API_KEY``, ``ANTHROPIC_BASE_URL``,
          ``ANTHROPIC_API_KEY``: the trial's LLM through its recording proxy
          (``llm_proxy``: recorded, or answered frozen, as an in-process call);
          ``REPLAY_MODEL`` when a model is set, ``REPLAY_SETTINGS`` (``--set``, as JSON);
        - ``REPLAY_MCP_URL`` and ``REPLAY_MCP_COMMAND``: the trial's tools over MCP;
        - ``REPLAY_USER_URL``, in a multi-turn case: the simulated user (``POST``
          ``{"text": ...}``, answered ``{"reply": ...}``, ``null`` once it has ended;
          the instruction is its opening message);
        - ``REPLAY_MCP_<NAME>_URL`` and ``REPLAY_MCP_<NAME>_COMMAND``: each
          third-party server's proxy (``NAME`` upper-cased, other characters ``_``);
          ``REPLAY_MCP_SERVERS``: all of them by name, as JSON.

        A command is a JSON array (unambiguous in every language). Asking
        starts the trial's endpoints (not the third-party servers: each starts
        on its first request).
        """
        llm = self.llm_proxy.url if self.llm_proxy is not None else self.llm_base_url
        found = {
            "OPENAI_BASE_URL": llm,
            "OPENAI_API_KEY": self.api_key,
            "ANTHROPIC_BASE_URL": llm.removesuffix("/").removesuffix("/v1"),
            "ANTHROPIC_API_KEY": self.api_key,
            "REPLAY_SETTINGS": json.dumps(self.settings, default=str),
        }
        if self.model is not None:
            found["REPLAY_MODEL"] = self.model
        if self.user is not None:
            found["REPLAY_USER_URL"] = self.user.url
        servers: list[tuple[str, McpTools | McpProxy]] = [
            (f"_{re.sub(r'[^A-Z0-9]', '_', name.upper())}", server)
            for name, server in self.mcp_servers.items()
        ]
        if self.mcp is not None:
            servers.insert(0, ("", self.mcp))
        infixes = [infix for infix, _ in servers]
        if len(set(infixes)) < len(infixes):
            from recorder import ConfigError

            raise ConfigError(
                f"MCP server names {sorted(self.mcp_servers)} give the same variable names: "
                "rename one (letters and digits are kept, the rest become _)"
            )
        for infix, server in servers:
            found[f"REPLAY_MCP{infix}_URL"] = server.url
            found[f"REPLAY_MCP{infix}_COMMAND"] = json.dumps(server.command)
        found["REPLAY_MCP_SERVERS"] = json.dumps(
            {name: {"url": s.url, "command": s.command} for name, s in self.mcp_servers.items()}
        )
        return found


def as_function(
    original: Tool[..., Any], call_tool: Callable[[str, Mapping[str, Any]], Any]
) -> Callable[..., Any]:
    """``original`` as a plain function calling ``call_tool``, for a framework to wrap.

    It has the tool's name, signature (``Tool.signature``: annotations
    resolved, so a framework's ``get_type_hints`` needs no globals of ours)
    and docstring, and is ``async`` when the tool is: a framework builds from
    it the schema it builds from the tool's own function, and awaits it when
    it should. Arguments are bound against that signature, positionally or by
    name, as the framework passes them; a context the framework fills
    (``Tool.context``: ``RunContext``...) stays with the agent, unsent.
    """
    name, signature = original.name, original.signature

    def arguments(args: tuple[Any, ...], kwargs: dict[str, Any]) -> dict[str, Any]:
        bound = signature.bind(*args, **kwargs)
        bound.apply_defaults()
        out: dict[str, Any] = {}
        for key, value in bound.arguments.items():
            if key in original.context:
                continue  # the framework's context stays with the agent (``Tool.context``)
            if signature.parameters[key].kind is inspect.Parameter.VAR_KEYWORD:
                out.update(value)
            else:
                out[key] = value
        return out

    def call(*args: Any, **kwargs: Any) -> Any:
        return call_tool(name, arguments(args, kwargs))

    async def call_async(*args: Any, **kwargs: Any) -> Any:
        result = call(*args, **kwargs)
        return await result if inspect.isawaitable(result) else result

    function: Any = call_async if inspect.iscoroutinefunction(original) else call
    function.__signature__ = signature
    function.__annotations__ = {
        p.name: p.annotation for p in signature.parameters.values() if p.annotation is not p.empty
    }
    if signature.return_annotation is not signature.empty:
        function.__annotations__["return"] = signature.return_annotation
    target = inspect.unwrap(original)
    function.__name__ = function.__qualname__ = name
    function.__doc__ = getattr(target, "__doc__", None) or original.description  # as written
    function.__module__ = getattr(target, "__module__", __name__)
    return call_async if function is call_async else call


def environment(
    tools: Sequence[Tool[..., Any]],
    dispatch: Callable[[str, Mapping[str, Any]], Any],
    faults: FaultInjector | None,
    llm_base_url: str,
    model: str | None,
    settings: Mapping[str, Any] | None,
    user: UserChannel | None,
    servers: Mapping[str, McpProxy] | None = None,
) -> Environment:
    """The agent's environment, alike in sandbox and offline.

    ``tools``' schemas, ``dispatch`` (faults injected) to call them, the same
    as functions and over MCP, and the LLM endpoint and settings.
    """
    from ..mcp import McpTools
    from ..surroundings import LlmProxy

    if faults is not None:
        dispatch = faults.wrap(dispatch)
    specs = [t.openai_schema() for t in tools]
    return Environment(
        specs,
        dispatch,
        llm_base_url,
        model,
        dict(settings or {}),
        user=user,
        functions=_Functions(tools, dispatch),
        mcp=McpTools(specs, dispatch),
        mcp_servers=dict(servers or {}),
        llm_proxy=LlmProxy(llm_base_url),
    )


class _Functions(Sequence[Callable[..., Any]]):
    """``env.functions``, built on first use.

    Most agents never ask, and each costs a signature read (its annotations
    evaluated) per tool per trial.
    """

    def __init__(
        self, tools: Sequence[Tool[..., Any]], call_tool: Callable[[str, Mapping[str, Any]], Any]
    ) -> None:
        self._tools, self._call_tool = tools, call_tool
        self._built: list[Callable[..., Any]] | None = None

    def _all(self) -> list[Callable[..., Any]]:
        if self._built is None:
            self._built = [as_function(t, self._call_tool) for t in self._tools]
        return self._built

    def __getitem__(self, index: Any) -> Any:
        return self._all()[index]

    def __len__(self) -> int:
        return len(self._tools)

    def __repr__(self) -> str:
        return repr(self._all())


def dispatcher(
    tools: Sequence[Tool[..., Any]] | Mapping[str, Callable[..., Any]],
) -> Callable[[str, Mapping[str, Any]], Any]:
    by_name = dict(tools) if isinstance(tools, Mapping) else {t.name: t for t in tools}

    def call_tool(name: str, arguments: Mapping[str, Any]) -> Any:
        if name not in by_name:
            raise LookupError(f"unknown tool {name!r}; the environment has {', '.join(by_name)}")
        called = by_name[name]
        # A framework's context cannot cross to where the harness runs a tool: None there.
        context = {c: None for c in getattr(called, "context", ()) if c not in arguments}
        return called(**context, **arguments)

    return call_tool
