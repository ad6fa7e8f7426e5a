"""Parameters a framework fills itself: the run's context, not the model's arguments.

pydantic-ai passes ``ctx: RunContext[Deps]`` to ``@agent.tool`` functions,
openai-agents ``RunContextWrapper[...]`` (or its ``ToolContext``), LangChain and
LangGraph an argument marked ``InjectedToolArg`` (``InjectedState``,
``InjectedStore``, ``InjectedToolCallId``), a ``ToolRuntime``, a
``RunnableConfig`` or a callback manager. Such a parameter is recognised by its
type (``is_context``): ``recorder.tool`` leaves it out of the tool's schema and
of the recorded arguments, and passes it to the function untouched. The
frameworks need not be installed: types are named, not imported.
"""

from __future__ import annotations

import inspect
import re
import types
import typing
from collections.abc import Callable
from typing import Any

CONTEXT_TYPES: dict[str, frozenset[str]] = {
    "pydantic_ai": frozenset({"RunContext"}),
    "agents": frozenset({"RunContextWrapper"}),
    "langchain_core": frozenset(
        {"InjectedToolArg", "_DirectlyInjectedToolArg", "RunnableConfig", "BaseRunManager"}
    ),
}
"""Per top-level package, the classes whose instances (or subclasses', or the
marker's, in ``Annotated[..., marker]``) a framework injects into a tool. A
framework more is an entry more."""

CONTEXT_NAMES: frozenset[str] = frozenset(
    {
        *(name for names in CONTEXT_TYPES.values() for name in names),
        *("ToolContext", "ToolRuntime", "InjectedState", "InjectedStore", "InjectedToolCallId"),
        *("CallbackManagerForToolRun", "AsyncCallbackManagerForToolRun"),
    }
)
"""The same, and their subclasses, by name: for an annotation that did not resolve (a
string: ``from __future__ import annotations`` with the framework imported elsewhere)."""


def context_parameters(
    fn: Callable[..., Any], signature: inspect.Signature | None = None
) -> frozenset[str]:
    """The names of ``fn``'s parameters its framework fills (``is_context``).

    ``signature``: ``fn``'s, where the caller has it. A function of ``*args`` and
    ``**kwargs`` alone has none (a forwarder: its annotations are not evaluated).
    """
    if signature is None:
        try:
            signature = inspect.signature(fn)
        except (TypeError, ValueError):
            return frozenset()
    if all(p.kind in (p.VAR_POSITIONAL, p.VAR_KEYWORD) for p in signature.parameters.values()):
        return frozenset()
    try:
        hints = dict(inspect.get_annotations(inspect.unwrap(fn), eval_str=True))
    except Exception:  # a name only the framework's module knows: read as written
        hints = {}
    return frozenset(
        name
        for name, param in signature.parameters.items()
        if is_context(hints.get(name, param.annotation))
    )


def is_context(annotation: Any) -> bool:
    """Whether a parameter so annotated is filled by its framework (``CONTEXT_TYPES``).

    The annotation itself, its generic origin (``RunContext[Deps]``), each member
    of a union (``RunnableConfig | None``) and each ``Annotated`` marker are looked
    at, with their base classes; a string (an annotation that did not resolve) by
    the names it spells (``"RunContext[Deps]"``, ``"Annotated[str, InjectedState]"``:
    ``CONTEXT_NAMES``).
    """
    if isinstance(annotation, str):
        return not CONTEXT_NAMES.isdisjoint(re.findall(r"\w+", annotation))
    if typing.get_origin(annotation) is typing.Annotated:
        _, *markers = typing.get_args(annotation)
        return any(_injected(m if isinstance(m, type) else type(m)) for m in markers) or (
            is_context(typing.get_args(annotation)[0])
        )
    if typing.get_origin(annotation) in (typing.Union, types.UnionType):
        return any(is_context(a) for a in typing.get_args(annotation) if a is not type(None))
    origin = typing.get_origin(annotation) or annotation
    return isinstance(origin, type) and _injected(origin)


def _injected(cls: type) -> bool:
    for base in getattr(cls, "__mro__", (cls,)):
        package = (getattr(base, "__module__", None) or "").partition(".")[0]
        if base.__name__ in CONTEXT_TYPES.get(package, ()):
            return True
    return False
