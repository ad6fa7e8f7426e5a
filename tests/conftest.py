from __future__ import annotations

import contextlib
import os
from collections.abc import Iterator
from pathlib import Path

import pytest

from replay.stub_llm import StubLLM

# stdio_client's `errlog=sys.stderr` default is bound when its module is first imported:
# import it now, while sys.stderr is a real file, not inside a CliRunner call (whose stderr
# has no fileno, so an in-process agent starting an MCP server there fails). Without the
# mcp extra, the tests that need it skip.
with contextlib.suppress(ImportError):
    import mcp.client.stdio  # noqa: F401


def pytest_configure(config: pytest.Config) -> None:
    """The tests' temporary folders in memory (``/dev/shm``), not on disk.

    Their runs write SQLite stores, worlds and cassettes, synced as they go: on this
    disk the suite took 8% longer. ``--basetemp`` or ``PYTEST_DEBUG_TEMPROOT`` (pytest's
    own variable for this) choose another place; pytest keeps the last three sessions'.
    """
    if config.option.basetemp is None and os.access("/dev/shm", os.W_OK):
        os.environ.setdefault("PYTEST_DEBUG_TEMPROOT", "/dev/shm")


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """The tests marked ``slow`` first, the rest after them in their order.

    pytest-xdist hands tests out in this order: the long ones start early, one on each
    process, and the quick ones even the processes out at the end, rather than a long
    one collected last running alone while the other process has nothing left to do.
    """
    items.sort(key=lambda item: item.get_closest_marker("slow") is None)


@pytest.fixture(scope="session", autouse=True)
def _session_scratch(tmp_path_factory: pytest.TempPathFactory) -> Iterator[None]:
    """Runs made before any test's own scratch folder is set go in one of the session's.

    (A session or module fixture that runs trials, the regrade tests' recording, starts
    before ``_own_scratch``: its workers' scratch folders went to the host's
    ``/dev/shm``, which the wall tests on the other test process compare.)
    """
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("REPLAY_SCRATCH", str(tmp_path_factory.mktemp("session-scratch")))
        yield


@pytest.fixture(autouse=True)
def _own_scratch(tmp_path_factory: pytest.TempPathFactory, monkeypatch: pytest.MonkeyPatch) -> None:
    """Each test's workers keep their scratch folders in a folder of the test's own.

    (A test that checks what a run leaves behind then sees its run alone, not
    every process on the machine that shares ``/dev/shm``.)
    """
    monkeypatch.setenv("REPLAY_SCRATCH", str(tmp_path_factory.mktemp("scratch")))


@pytest.fixture
def stub_llm() -> Iterator[StubLLM]:
    """A started stub LLM server (echo policy), stopped after the test."""
    with StubLLM() as stub:
        yield stub


@pytest.fixture
def cassette_path(tmp_path: Path) -> Path:
    return tmp_path / "trial.cassette"


pytest_plugins = ["pytester"]
