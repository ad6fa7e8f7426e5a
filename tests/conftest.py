from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from replay.stub_llm import StubLLM


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
