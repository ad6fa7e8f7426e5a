"""The interceptors' lifetime: loaded on the first install, patched in while held, then out."""

from __future__ import annotations

import subprocess
import sys
import textwrap

from tests.helpers import REPO

CODE = textwrap.dedent(
    """
    import sys, recorder
    clients = ("httpx", "vcr", "aiohttp", "requests", "urllib3")
    print(sorted(set(clients) & set(sys.modules)))
    import aiohttp, httpx, http.client
    originals = [
        httpx.HTTPTransport.handle_request,
        aiohttp.ClientSession._request,
        http.client.HTTPConnection,
    ]
    with recorder.patched():
        inside = [
            httpx.HTTPTransport.handle_request,
            aiohttp.ClientSession._request,
            http.client.HTTPConnection,
        ]
        print([a is not b for a, b in zip(originals, inside)])
    after = [
        httpx.HTTPTransport.handle_request,
        aiohttp.ClientSession._request,
        http.client.HTTPConnection,
    ]
    print([a is b for a, b in zip(originals, after)])
    """
)


def test_import_loads_no_client_and_patched_installs_every_interceptor() -> None:
    out = subprocess.run(
        [sys.executable, "-W", "error", "-c", CODE],
        capture_output=True,
        text=True,
        cwd=REPO,
        check=True,
    )
    assert out.stdout.split("\n")[:3] == ["[]", "[True, True, True]", "[True, True, True]"]
