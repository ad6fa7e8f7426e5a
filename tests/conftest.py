from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from replay.stub_llm import StubLLM


@pytest.fixture
def stub_llm() -> Iterator[StubLLM]:
    """A started stub LLM server (echo policy), stopped after the test."""
    with StubLLM() as stub:
        yield stub


@pytest.fixture
def cassette_path(tmp_path: Path) -> Path:
    return tmp_path / "trial.cassette"


pytest_plugins = ["pytester"]
