"""``replay run``'s option values that are read into settings: ``--set``, ``--price``, ...

Each takes the option's value and the others' by parameter name (``OPTIONS``' ``value``),
and raises a one-line error naming its option on bad input.
"""

from __future__ import annotations

import json
import shlex
from collections.abc import Mapping
from typing import Any

import click

from recorder import ConfigError

from ..agents import AgentCommand
from ..mcp import McpServer

_URLS = ("http://", "https://")


def settings_pairs(pairs: tuple[str, ...], others: Mapping[str, Any]) -> dict[str, Any]:
    """``--set key=value`` (a value read as JSON where it is JSON) as the agent's settings."""
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


def prices(pairs: tuple[str, ...], others: Mapping[str, Any]) -> dict[str, tuple[float, float]]:
    """``--price MODEL=IN:OUT`` as the prices by model."""
    out = {}
    for pair in pairs:
        model, _, rates = pair.partition("=")
        given, _, taken = rates.partition(":")
        try:
            out[model] = (float(given), float(taken))
        except ValueError:
            raise click.BadParameter(
                f"{pair!r} is not MODEL=IN:OUT", param_hint="--price"
            ) from None
    return out


def agent_command(line: str | None, others: Mapping[str, Any]) -> list[str] | None:
    """``--agent-cmd`` split as a shell would."""
    return list(AgentCommand.parse(line).argv) if line else None


def mcp_servers(servers: tuple[str, ...], envs: tuple[str, ...]) -> dict[str, McpServer]:
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
