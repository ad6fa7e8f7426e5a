"""A run's spec as stored: what it hides, and a version-1 spec's flat fields in groups.

Hidden are secrets by their names, URL credentials and MCP servers' secrets: resuming
the run takes them again (``RunSpec.restored``).
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import fields
from typing import Any

from recorder import PLACEHOLDER, Redaction, secret_named

from ..mcp import McpServer


def stored_server(server: McpServer) -> dict[str, Any]:
    """A server's fields, JSON-ready (sequences as lists, mappings as dicts)."""
    return {f.name: _plain(getattr(server, f.name)) for f in fields(server)}


def _plain(value: Any) -> Any:
    if isinstance(value, Mapping):
        return {str(k): _plain(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_plain(v) for v in value]
    return value


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
    """Settings as stored: the values of secret-named keys, and URLs with a password, replaced."""
    return {k: PLACEHOLDER if secret_named(k, v) else v for k, v in settings.items()}


def hide_server(server: McpServer | Mapping[str, Any]) -> dict[str, Any]:
    """An MCP server as stored: URL credentials, secret-named variables and options hidden."""
    stored = stored_server(server) if isinstance(server, McpServer) else dict(server)
    stored["url"] = hide_url(stored.get("url"))
    stored["env"] = hide_settings(stored.get("env") or {})
    stored["command"] = _hidden_args(list(stored.get("command") or ()))
    return stored


def secret_args(command: Sequence[str]) -> list[str]:
    """Values of secret-named options in a command: ``--api-key X``, ``--token=X``."""
    return [value for _, value, _ in _secret_options(command) if value != PLACEHOLDER]


def _hidden_args(command: list[str]) -> list[str]:
    """A command with the values of its secret-named options replaced."""
    for at, _, inline in _secret_options(command):
        command[at] = f"{command[at].partition('=')[0]}={PLACEHOLDER}" if inline else PLACEHOLDER
    return command


def _secret_options(command: Sequence[str]) -> list[tuple[int, str, bool]]:
    """Each secret option's value: where it is, the value, and whether inline (``=``).

    A secret option is named like a secret or given a URL with a password
    (``recorder.secret_named``).
    """
    found = []
    for i, arg in enumerate(command):
        name, eq, value = arg.partition("=")
        given = command[i + 1] if not eq and i + 1 < len(command) else ""
        if not name.startswith("-"):
            continue
        if eq and value and secret_named(name, value):
            found.append((i, value, True))
        elif given and not given.startswith("-") and secret_named(name, given):
            found.append((i + 1, given, False))
    return found


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


def grouped(flat: dict[str, Any], groups: Iterable[str]) -> dict[str, Any]:
    """A version-1 (flat) spec in version 2's ``groups``."""
    out: dict[str, Any] = {name: {} for name in groups}
    for key, value in flat.items():
        if key == "no_judge":
            out["judge"]["enabled"] = not value
        elif key in _FLAT:
            group, name = _FLAT[key]
            out[group][name] = value
        else:
            out[key] = value
    return out
