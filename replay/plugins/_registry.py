"""One registry type for every extension point: modes, graders, executor backends, world kinds.

Built-ins register by import; installed packages add theirs through entry points
(``GROUPS``), loaded on the first lookup or listing, as pytest finds its plugins.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterator, Mapping
from importlib.metadata import EntryPoint, entry_points
from types import ModuleType
from typing import Any, TypeVar

from recorder import ConfigError

T = TypeVar("T")

GROUPS = {
    "modes": "agent_replay.modes",
    "graders": "agent_replay.graders",
    "backends": "agent_replay.backends",
    "worlds": "agent_replay.worlds",
}
"""The entry-point group of each registry (``agent_replay.worlds`` is kept for world kinds)."""


class Registry(Mapping[str, T]):
    """Named entries of one kind: registered by import, or found in installed plugins.

    - ``register(name, entry)``: the same entry again is a no-op; another entry under a
      taken name raises ``ConfigError`` (``unregister`` the other first to replace it).
    - ``registry[name]``: an unknown name raises ``ConfigError`` listing the known ones.
    - ``names()`` and iteration: built-ins first, then plugins, in registration order.

    A plugin is an entry point in the registry's group (``GROUPS``), read on the first
    listing or lookup of a name not registered yet (a plugin's import may look up a
    built-in): it names the entry itself (registered under the entry point's name, after
    ``adopt`` checks it), or a module whose import registers its entries.

    Example:
        ```toml
        [project.entry-points."agent_replay.graders"]
        polite = "my_plugin.graders:polite"
        ```
    """

    def __init__(
        self, kind: str, group: str | None = None, adopt: Callable[[str, Any], T] | None = None
    ) -> None:
        """A registry of ``kind`` (a noun for messages), with plugins from ``group``.

        ``adopt(name, obj)`` turns what a plugin's entry point names into an entry,
        raising ``ConfigError`` when it is not one (default: the object as it is).
        """
        self.kind = kind
        self.group = group
        self._adopt = adopt
        self._entries: dict[str, T] = {}
        self._loaded = group is None
        self._loading = False
        self._lock = threading.RLock()

    def register(self, name: str, entry: T) -> T:
        """Add ``entry`` under ``name`` and return it (the same entry again: nothing happens).

        Raises:
            ConfigError: Another entry holds ``name``.
        """
        with self._lock:
            held = self._entries.get(name)
            if held is not None and held is not entry:
                raise ConfigError(
                    f"a {self.kind} named {name!r} is already registered ({_described(held)}): "
                    f"register yours under another name, or unregister {name!r} first"
                )
            self._entries[name] = entry
        return entry

    def unregister(self, name: str) -> T | None:
        """Remove the entry of ``name`` and return it (None: there was none)."""
        with self._lock:
            return self._entries.pop(name, None)

    def names(self) -> list[str]:
        """The registered names, plugins' included: built-ins first, in registration order."""
        self.load()
        return list(self._entries)

    def __getitem__(self, name: str) -> T:
        """The entry of ``name`` (plugins are read when it is not registered yet).

        Raises:
            ConfigError: No entry has that name (the message lists the names there are).
        """
        found = self.get(name)
        if found is None:
            known = ", ".join(self._entries) or "none"
            raise ConfigError(f"no {self.kind} {name!r}; the {self.kind}s are {known}")
        return found

    def get(self, name: str, default: T | None = None) -> T | None:  # type: ignore[override]
        """The entry of ``name``, or ``default``."""
        if name not in self._entries:
            self.load()
        return self._entries.get(name, default)

    def __contains__(self, name: object) -> bool:
        return isinstance(name, str) and self.get(name) is not None

    def __iter__(self) -> Iterator[str]:
        return iter(self.names())

    def __len__(self) -> int:
        self.load()
        return len(self._entries)

    def load(self) -> None:
        """Read the installed plugins of the registry's group (once a process; see the class).

        A lookup or a listing calls it; a plugin that registers something as it is
        imported does not load the plugins again (nor does another thread meanwhile).

        Raises:
            ConfigError: A plugin cannot be loaded, or names what is not a ``kind``
                (the message names the plugin); the next lookup tries again.
        """
        if self._loaded:
            return
        with self._lock:
            if self._loaded or self._loading:
                return
            self._loading = True
            try:
                assert self.group is not None  # (no group: loaded from the start)
                for point in entry_points(group=self.group):
                    self._plug(point)
                self._loaded = True
            finally:
                self._loading = False

    def _plug(self, point: EntryPoint) -> None:
        try:
            obj = point.load()
            if isinstance(obj, ModuleType):
                return  # its import registered what it holds
            self.register(point.name, self._adopt(point.name, obj) if self._adopt else obj)
        except _Broken:
            raise  # another registry's plugin, loaded by this one's import: said already
        except Exception as exc:  # not found, raises on import, not a kind, a taken name
            what = str(exc) if isinstance(exc, ConfigError) else f"{type(exc).__name__}: {exc}"
            raise _Broken(
                f"plugin {_plugin(point)} ({self.group}: {point.name} = {point.value}) is "
                f"broken: {what}; fix or uninstall it"
            ) from None


class _Broken(ConfigError):
    """A plugin cannot be loaded (the message names it)."""


def _plugin(point: EntryPoint) -> str:
    """The distribution that declares an entry point, as ``name version``."""
    dist = getattr(point, "dist", None)
    if dist is None:
        return repr(point.value.partition(":")[0])
    return f"{dist.metadata['Name']} {dist.version}"


def _described(entry: object) -> str:
    """What an entry is, for a message: ``module.name`` for a function, else its type."""
    name = getattr(entry, "__qualname__", None)
    if name is None:
        return f"a {type(entry).__name__}"
    return f"{getattr(entry, '__module__', '?')}.{name}"
