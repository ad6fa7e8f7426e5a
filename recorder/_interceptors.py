"""The HTTP interceptors every session patches in, registered with ``_session``.

``_session`` is below the interceptors (they import it to find the call's
session), so it cannot import them; the package imports this module instead,
which tells it what to install. Each client library is imported on the first
install, not by ``import recorder``.
"""

from __future__ import annotations

import importlib.util
from typing import Any

from . import _session


def _httpx() -> list[Any]:
    from ._http import httpx_patches

    return httpx_patches()


def _vcr() -> list[Any]:
    from ._vcr import vcr_patches  # requests, urllib3, http.client

    return vcr_patches()


def _aiohttp() -> list[Any]:
    if importlib.util.find_spec("aiohttp") is None:  # an optional client
        return []
    from ._aiohttp import aiohttp_patches

    return aiohttp_patches()


_session.add_interceptor(_httpx)
_session.add_interceptor(_vcr)
_session.add_interceptor(_aiohttp)
