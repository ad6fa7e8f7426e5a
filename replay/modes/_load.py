"""Load ``module:function``: an agent, tools or a grader named in a spec or on the command line.

Light on purpose: a walled child imports it, and nothing of the harness behind it.
"""

from __future__ import annotations

import importlib
import os
import sys
from collections.abc import Callable
from typing import Any


def load_callable(spec: str) -> Callable[..., Any]:
    """Import ``module:function``.

    Raises:
        ConfigError: The spec is malformed or does not resolve to a callable.
    """
    module_name, _, attr = spec.partition(":")
    if os.getcwd() not in sys.path:  # as pytest and uvicorn do: the project's own modules
        sys.path.insert(0, os.getcwd())
    if not module_name or not attr:
        raise _refused(f"{spec!r} is not module:function (e.g. examples.shop:agent)")
    try:
        target: Any = importlib.import_module(module_name)
        for part in attr.split("."):
            target = getattr(target, part)
    except (ImportError, AttributeError) as exc:
        raise _refused(f"cannot load {spec!r}: {exc}") from None
    if not callable(target):
        raise _refused(f"{spec!r} is not callable")
    return target  # type: ignore[no-any-return]


def _refused(message: str) -> Exception:
    from recorder import ConfigError  # (only now: loading what works needs no recorder)

    return ConfigError(message)
