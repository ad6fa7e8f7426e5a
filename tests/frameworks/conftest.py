"""What the framework tests share.

litellm fetches its model price map from GitHub when imported; here there is no network.

litellm's sync calls (``ServiceLogging._sync_dispatch_loop``) call ``asyncio.get_event_loop()``
on the main thread, which creates and sets an event loop nobody closes. Whatever next calls
``asyncio.run`` on that thread unsets it, and the collector later warns "unclosed event loop"
during whichever test runs then (an error under our ``filterwarnings``). Each test here closes
the loop its agent left set, so a later test never pays for it.
"""

import asyncio
import os
import warnings
from collections.abc import Iterator

import pytest

os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")


@pytest.fixture(autouse=True)
def _close_the_loop_an_agent_left() -> Iterator[None]:
    yield
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)
        try:
            loop = asyncio.get_event_loop()  # on the main thread: the one left set, or a new one
        except RuntimeError:  # none set, and asyncio.run already unset one
            return
    if not loop.is_running():
        loop.close()
    asyncio.set_event_loop(None)
