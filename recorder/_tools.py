"""Tool-call capture: ``@tool`` records each call, its result and its world delta.

A tool's JSON schema comes from its type hints (through pydantic), so the
agent can hand it to the model, and ``tool_schema_hash`` turns a set of
tools into a pin.
"""

from __future__ import annotations

import copy
import functools
import inspect
import re
import threading
import types
import warnings
from collections.abc import Awaitable, Callable, Iterable
from contextvars import ContextVar
from typing import Any, Generic, ParamSpec, TypeVar, cast, overload

import pydantic
from pydantic_core import to_jsonable_python

from ._context import context_parameters, is_context
from ._errors import ToolSchemaError
from ._llm import short_hash
from ._recording import Recording
from ._session import current_session

_in_tool: ContextVar[bool] = ContextVar("agent_replay_in_tool", default=False)
"""True inside a recorded tool: nested tool calls belong to the outer call's delta."""

P = ParamSpec("P")
R = TypeVar("R")

_BOUND = ("self", "cls")
_ARG_LINE = re.compile(r"^\s{2,}(\w+)(?:\s*\([^)]*\))?:\s*(.+)$")


def jsonable(value: Any) -> Any:
    """Return ``value`` as JSON-ready data (pydantic models, dataclasses...); repr() otherwise."""
    return to_jsonable_python(value, fallback=repr)


def _docs(fn: Callable[..., Any]) -> tuple[str, dict[str, str]]:
    doc = inspect.getdoc(fn) or ""
    summary = doc.split("\n\n", 1)[0].replace("\n", " ").strip()
    params: dict[str, str] = {}
    in_args = False
    for line in doc.splitlines():
        if line.strip() in ("Args:", "Arguments:", "Parameters:"):
            in_args = True
            continue
        if in_args:
            match = _ARG_LINE.match(line)
            if match:
                params[match.group(1)] = match.group(2).strip()
            elif line and not line.startswith(" "):
                in_args = False
    return summary, params


_schemas: dict[tuple[Any, ...], dict[str, Any]] = {}
_schemas_lock = threading.Lock()


def _parameters_schema(fn: Callable[..., Any], name: str) -> dict[str, Any]:
    """The JSON schema of ``fn``'s arguments (built once per function definition).

    A tool factory makes new closures for every world; their code, defaults
    and docstring are the same, so is their schema (pydantic takes ~1.5 ms
    to build it: more than the rest of a trial's recording).
    """
    code = getattr(fn, "__code__", None)
    if code is None:
        return _build_schema(fn, name)
    key = (code, name, repr(getattr(fn, "__defaults__", None)), repr(fn.__kwdefaults__ or {}))
    with _schemas_lock:
        found = _schemas.get(key)
    if found is None:
        found = _build_schema(fn, name)
        with _schemas_lock:
            _schemas[key] = found
    return copy.deepcopy(found)


def _build_schema(fn: Callable[..., Any], name: str) -> dict[str, Any]:
    try:
        sig = inspect.signature(fn)
    except (TypeError, ValueError) as exc:
        raise ToolSchemaError(f"tool {name!r}: cannot read its signature ({exc})") from None
    hints: dict[str, Any]
    try:
        hints = dict(inspect.get_annotations(fn, eval_str=True))
    except Exception:  # unresolvable forward references, builtins without annotations
        hints = {}
    _, described = _docs(fn)
    fields: dict[str, Any] = {}
    first = next(iter(sig.parameters.values()), None)
    for param in sig.parameters.values():
        if param.kind in (param.VAR_POSITIONAL, param.VAR_KEYWORD):
            continue  # *args/**kwargs have no names to offer a model
        if param.name in _BOUND and param is first:
            continue  # a method's receiver is not the model's to give
        if is_context(hints.get(param.name, param.annotation)):
            continue  # the framework's run context (``_context``): not the model's either
        default = ... if param.default is param.empty else param.default
        info = pydantic.Field(default, description=described.get(param.name))
        fields[param.name] = (hints.get(param.name, Any), info)
    try:
        # pydantic warns about names like "json" and defaults it cannot serialise; the
        # schema it gives is still right, and a user's -W error must not break tools.
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            model = pydantic.create_model(f"{name}_args", **fields)
            schema: dict[str, Any] = model.model_json_schema()
    except (pydantic.PydanticUserError, pydantic.PydanticSchemaGenerationError, TypeError) as exc:
        raise ToolSchemaError(
            f"tool {name!r}: its type hints have no JSON schema ({exc})"
        ) from None
    schema.pop("title", None)
    for prop in schema.get("properties", {}).values():
        prop.pop("title", None)
    return schema


class Tool(Generic[P, R]):
    """A function whose calls are recorded while a recording is active.

    Attributes:
        name: The name the model calls it by.
        description: First paragraph of the docstring, unless given.
        writes: Whether the tool changes the world (recorded as its effect).
        parameters: JSON schema of its arguments, from the type hints unless given.
        context: The parameters its framework fills (``RunContext``...: ``_context``),
            in neither its schema nor its recorded arguments; passed on untouched.
    """

    def __init__(
        self,
        fn: Callable[P, R],
        *,
        name: str | None = None,
        description: str | None = None,
        writes: bool = False,
        parameters: dict[str, Any] | None = None,
    ) -> None:
        self.fn = fn
        target = fn.func if isinstance(fn, functools.partial) else fn
        self.name = name or getattr(target, "__name__", None) or type(target).__name__
        self.description = description if description is not None else _docs(target)[0]
        self.writes = writes
        self.parameters = (
            parameters if parameters is not None else _parameters_schema(fn, self.name)
        )
        self._sig = inspect.signature(fn)
        first = next(iter(self._sig.parameters), None)
        self._receiver = {first} if first in _BOUND else set()
        self.context = context_parameters(fn, self._sig) - self._receiver
        self._var_keyword = next(
            (p.name for p in self._sig.parameters.values() if p.kind is p.VAR_KEYWORD), None
        )
        self._keywords_only = [p.kind for p in self._sig.parameters.values()] == [
            inspect.Parameter.VAR_KEYWORD
        ] and not self.context
        """Its one parameter is ``**kwargs`` (a proxy's forwarder): its arguments are the
        keywords as given, without binding them to the signature (~15 us a call)."""
        self._is_async = inspect.iscoroutinefunction(fn) or inspect.iscoroutinefunction(
            getattr(fn, "__call__", None)  # noqa: B004 - an async callable object
        )
        functools.update_wrapper(self, target)
        if self._is_async:
            _mark_coroutine_function(self)

    def __get__(self, obj: Any, objtype: Any = None) -> Any:
        """Bind to an instance when used on a method (``obj.tool(...)``)."""
        return self if obj is None else types.MethodType(self, obj)

    @property
    def signature(self) -> inspect.Signature:
        """The call's parameters as a model gives them.

        The receiver is dropped and string annotations resolved where they resolve:
        what a framework builds a schema from.
        """
        try:
            sig = inspect.signature(self.fn, eval_str=True)
        except Exception:  # an annotation that does not resolve: as written
            sig = self._sig
        params = [p for p in sig.parameters.values() if p.name not in self._receiver]
        return sig.replace(parameters=params)

    def openai_schema(self) -> dict[str, Any]:
        """Return the tool as an OpenAI ``tools`` entry."""
        return {
            "type": "function",
            "function": {
                "name": self.name,
                "description": self.description,
                "parameters": self.parameters,
            },
        }

    def anthropic_schema(self) -> dict[str, Any]:
        """Return the tool as an Anthropic ``tools`` entry."""
        return {"name": self.name, "description": self.description, "input_schema": self.parameters}

    def arguments(self, *args: Any, **kwargs: Any) -> dict[str, Any]:
        """The call's arguments by name, defaults filled in: what a recording stores.

        The framework's context (``context``) is not among them.

        Raises:
            TypeError: The arguments do not fit the signature.
        """
        if self._keywords_only and not args:
            return dict(kwargs)
        bound = self._sig.bind(*args, **kwargs)
        bound.apply_defaults()
        arguments: dict[str, Any] = {}
        for name, value in bound.arguments.items():
            if name in self._receiver or name in self.context:
                continue
            if name == self._var_keyword:  # **kwargs: recorded as the arguments they are
                arguments.update(value)
            else:
                arguments[name] = value
        return arguments

    def __call__(self, *args: P.args, **kwargs: P.kwargs) -> R:
        session = current_session()
        if not isinstance(session, Recording) or _in_tool.get():
            return self.fn(*args, **kwargs)
        try:
            arguments = self.arguments(*args, **kwargs)
        except TypeError as exc:  # the model called it wrongly: that is worth recording too
            given = {"args": list(args), "kwargs": kwargs}
            session.tool_finished(self.name, given, self.writes, None, None, exc, jsonable)
            raise
        if self._is_async:
            return cast(R, self._call_async(session, arguments, args, kwargs))
        start = session.tool_started(self.name)
        token = None
        try:
            token = _in_tool.set(True)
            result = self.fn(*args, **kwargs)
            check = session.hooks.check_result
            if check is not None:
                check(self.name, jsonable(result))
        except BaseException as exc:
            session.tool_finished(self.name, arguments, self.writes, start, None, exc, jsonable)
            raise
        finally:
            if token is not None:
                _in_tool.reset(token)
        session.tool_finished(self.name, arguments, self.writes, start, result, None, jsonable)
        return result

    async def _call_async(
        self, session: Recording, arguments: dict[str, Any], args: Any, kwargs: Any
    ) -> Any:
        start = await session.tool_started_async(self.name)
        token = None
        try:
            token = _in_tool.set(True)
            result = await cast(Awaitable[Any], self.fn(*args, **kwargs))
            check = session.hooks.check_result
            if check is not None:
                check(self.name, jsonable(result))
        except BaseException as exc:
            session.tool_finished(self.name, arguments, self.writes, start, None, exc, jsonable)
            raise
        finally:
            if token is not None:
                _in_tool.reset(token)
        session.tool_finished(self.name, arguments, self.writes, start, result, None, jsonable)
        return result

    def __repr__(self) -> str:
        effect = "writes" if self.writes else "reads"
        return f"<Tool {self.name} ({effect})>"


async def _coroutine_function(*args: Any, **kwargs: Any) -> Any:
    """Its code object marks a ``Tool`` of an async function as a coroutine function."""


def _mark_coroutine_function(tool: Tool[Any, Any]) -> None:
    """Make ``inspect``/``asyncio.iscoroutinefunction(tool)`` true, as for the function.

    Frameworks decide by ``inspect.iscoroutinefunction`` whether to await a tool;
    told no, they call it without awaiting and hand the model a coroutine's repr.
    Python 3.12 has ``inspect.markcoroutinefunction``; before it, ``inspect``
    takes an object with a function's attributes (``__code__`` of a coroutine
    function among them) as a function, as it does for Cython's. The signature
    still comes from the wrapped function (``__wrapped__``).
    """
    mark = getattr(inspect, "markcoroutinefunction", None)
    if mark is not None:
        mark(tool)
        return
    for name in ("__code__", "__defaults__", "__kwdefaults__"):
        setattr(tool, name, getattr(_coroutine_function, name))


@overload
def tool(
    fn: Callable[P, R],
    /,
    *,
    name: str | None = ...,
    description: str | None = ...,
    writes: bool = ...,
    parameters: dict[str, Any] | None = ...,
) -> Tool[P, R]: ...
@overload
def tool(
    *,
    name: str | None = ...,
    description: str | None = ...,
    writes: bool = ...,
    parameters: dict[str, Any] | None = ...,
) -> Callable[[Callable[P, R]], Tool[P, R]]: ...
def tool(
    fn: Callable[P, R] | None = None,
    /,
    *,
    name: str | None = None,
    description: str | None = None,
    writes: bool = False,
    parameters: dict[str, Any] | None = None,
) -> Tool[P, R] | Callable[[Callable[P, R]], Tool[P, R]]:
    """Make a function a recorded tool: as ``@tool``, ``@tool(writes=True)``, or a wrapper.

    Wrap a function you do not own with ``tool(requests.get, name="http_get")``.

    Args:
        fn: The function (omit when using ``@tool(...)``).
        name: Name the model sees; defaults to the function's name.
        description: Defaults to the first paragraph of the docstring.
        writes: Declare that the tool changes the world.
        parameters: JSON schema of the arguments, when the type hints cannot say it
            (a tool from another framework brings its own).

    Example:
        ```python
        @tool(writes=True)
        def issue_refund(order_id: int, amount: float) -> dict[str, Any]:
            \"\"\"Refund part or all of an order.\"\"\"
        ```
    """
    if fn is not None:
        return Tool(fn, name=name, description=description, writes=writes, parameters=parameters)

    def decorate(f: Callable[P, R]) -> Tool[P, R]:
        return Tool(f, name=name, description=description, writes=writes, parameters=parameters)

    return decorate


def tool_schema_hash(tools: Iterable[Tool[Any, Any] | dict[str, Any]]) -> str:
    """Return the pin for a set of tools: a hash of their schemas, in order."""
    return short_hash([t.openai_schema() if isinstance(t, Tool) else t for t in tools])
