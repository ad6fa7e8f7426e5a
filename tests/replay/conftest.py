from __future__ import annotations

from collections.abc import Iterator

import pytest

from replay.stub_llm import StubLLM


@pytest.fixture
def stub_llm() -> Iterator[StubLLM]:
    """A started stub LLM server answering with `EchoPolicy`, stopped after the test."""
    with StubLLM() as stub:
        yield stub
