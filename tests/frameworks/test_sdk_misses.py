"""An offline miss reaches an in-process SDK once, as an error naming what differs.

The frozen LLM answers a request its cassette does not hold with HTTP 400 and
``x-should-retry: false`` (``recorder.refusal``), not a raised exception that
the openai and anthropic SDKs (and litellm through them) would wrap as
"Connection error." and ask again with back-off. Each SDK asks once; its
exception's message carries the miss and the field that differs; the trial is
``unsupported``.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from recorder import HttpEvent, read_cassette
from replay import load_case, offline, sandbox
from replay.graders import Verdict
from replay.stub_llm import EchoPolicy, StubLLM

SDKS = {"openai": "openai", "anthropic": "anthropic", "litellm": "litellm"}
FIELD = {"openai": "messages[0].content", "anthropic": "system", "litellm": "messages[0].content"}

pytestmark = pytest.mark.slow


def _ask(sdk: str, instruction: str, env: Any) -> str:
    """One LLM call through ``sdk`` (its default retries); what it raised, as the answer."""
    prompt = env.settings.get("prompt", "You answer briefly.")
    messages = [{"role": "user", "content": instruction}]
    try:
        if sdk == "anthropic":
            import anthropic

            with anthropic.Anthropic(
                base_url=env.llm_base_url.removesuffix("/v1"), api_key="sk-team"
            ) as claude:
                said = claude.messages.create(
                    model="stub-1", max_tokens=64, system=prompt, messages=messages
                )
            return str(said.content[0].text)  # type: ignore[union-attr]
        messages.insert(0, {"role": "system", "content": prompt})
        if sdk == "litellm":
            import litellm

            reply = litellm.completion(
                model="openai/stub-1", api_base=env.llm_base_url, api_key="sk-team",
                messages=messages,
            )  # fmt: skip
            return str(reply.choices[0].message.content)
        import openai

        with openai.OpenAI(base_url=env.llm_base_url, api_key="sk-team") as gpt:
            answer = gpt.chat.completions.create(model="stub-1", messages=messages)  # type: ignore[arg-type]
        return str(answer.choices[0].message.content)
    except Exception as exc:
        return f"raised {type(exc).__name__}: {exc}"


@pytest.mark.parametrize("sdk", SDKS)
def test_an_sdk_meets_an_offline_miss_once_and_is_told_what_differs(
    sdk: str, tmp_path: Path
) -> None:
    pytest.importorskip(SDKS[sdk], reason="the frameworks extra is not installed")
    (tmp_path / "empty.sql").write_text("CREATE TABLE t (id INTEGER PRIMARY KEY);\n")
    (tmp_path / "ask.yaml").write_text("id: ask\ninstruction: Say hello.\nfixture: empty.sql\n")
    case = load_case(tmp_path / "ask.yaml")

    def agent(instruction: str, env: Any) -> str:
        return _ask(sdk, instruction, env)

    def tools(conn: Any) -> list[Any]:
        return []

    with StubLLM(EchoPolicy()) as llm:
        recorded = sandbox(
            case, agent, tools, tmp_path / "a.cassette", llm_base_url=llm.openai_base_url
        )
    answer = read_cassette(recorded.cassette).summary().final_answer or ""
    assert recorded.outcome.verdict is Verdict.PASS and not answer.startswith("raised"), answer

    missed = offline(
        case, agent, tools, read_cassette(recorded.cassette), tmp_path / "b.cassette",
        llm_base_url="http://127.0.0.1:9/v1", settings={"prompt": "You answer at length."},
    )  # fmt: skip
    assert missed.outcome.verdict is Verdict.UNSUPPORTED
    replayed = read_cassette(missed.cassette)
    asked = [e for e in replayed.events if isinstance(e, HttpEvent)]
    assert len(asked) == 1, [e.response.status for e in asked if e.response]  # never again
    assert asked[0].response is not None and asked[0].response.status == 400
    told = replayed.summary().final_answer or ""
    assert told.startswith("raised ") and "fixture unsupported" in told, told
    assert f"differing in {FIELD[sdk]}" in told, told
