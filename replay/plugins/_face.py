"""A package's face whose names load on first use: a command imports what it runs.

``replay`` and its stages bind their names this way: ``replay report`` reads the store
and prints a table, and loads neither the case model, the cassette reader nor the
graders (pydantic's models, YAML: most of a report's time, imported).
"""

from __future__ import annotations

import importlib
import sys
from collections.abc import Callable, Mapping
from typing import Any


def lazy_face(
    package: str, exports: Mapping[str, str]
) -> tuple[Callable[[str], Any], Callable[[], list[str]]]:
    """The module ``__getattr__`` and ``__dir__`` of ``package`` giving ``exports``.

    Args:
        package: The package's ``__name__``.
        exports: Each name and the module (relative to ``package``) that defines it.
    """

    def __getattr__(name: str) -> Any:
        where = exports.get(name)
        if where is None:
            raise AttributeError(f"module {package!r} has no attribute {name!r}")
        value = getattr(importlib.import_module(where, package), name)
        setattr(sys.modules[package], name, value)  # (found there from now on)
        return value

    def __dir__() -> list[str]:
        return sorted([*vars(sys.modules[package]), *exports])

    return __getattr__, __dir__
