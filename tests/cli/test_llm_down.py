"""An LLM endpoint that is down is the environment's failure, never the agent's.

Before a run with a live LLM, ``--llm-url`` is tried once: refused, the run does
not start (one line naming it, exit 3, no trial stored). An endpoint that accepts
connections but answers 5xx before it has answered once makes each trial an
``error`` of cause ``harness`` (infrastructure), not ``agent``: exit 3, not 1.
"""

from __future__ import annotations

from pathlib import Path

from replay import ExitCode, Store
from replay.stub_llm import ChatRequest, Fail, Reply, StubLLM
from tests.helpers import REPO, replay

CASE = str(REPO / "examples" / "shop" / "cases" / "refund-4812.yaml")
AGENT = [
    "--agent", "examples.shop:agent", "--tools", "examples.shop:make_tools",
    "--isolation", "none",
]  # fmt: skip


def test_an_endpoint_that_refuses_stops_the_run_before_any_trial(tmp_path: Path) -> None:
    store = str(tmp_path / "r.db")
    code, out, err = replay(
        "run", CASE, "--run", "down", "--store", store, "--llm-url", "http://127.0.0.1:9/v1",
        *AGENT,
    )  # fmt: skip
    assert code == ExitCode.INCOMPLETE, (out, err)  # the environment, not the agent (1)
    assert err.startswith("error: the LLM at --llm-url http://127.0.0.1:9/v1 cannot be reached")
    assert err.count("\n") == 1 and "--no-llm-check" in err
    assert Store(store).run("down") is None  # nothing started, nothing to resume


def test_an_endpoint_answering_5xx_before_any_answer_is_infrastructure(tmp_path: Path) -> None:
    def overloaded(request: ChatRequest) -> Fail:
        return Fail(503, "overloaded")

    store = str(tmp_path / "r.db")
    with StubLLM(overloaded) as llm:
        url = llm.openai_base_url
        code, _, err = replay(
            "run", CASE, "--run", "busy", "--store", store, "--llm-url", url, *AGENT
        )  # fmt: skip
    assert code == ExitCode.INCOMPLETE, err
    (trial,) = Store(store).trials("busy")
    assert (trial.verdict, trial.cause) == ("error", "harness")
    (detail,) = trial.cause_detail
    assert detail.startswith(f"the LLM at {url}/chat/completions failed before")
    assert detail.endswith("HTTP 503")


def flaky_then_crash(instruction: str, env: object) -> str:
    """Asks until the LLM answers (a retry that gets through), then fails on its own."""
    import httpx

    body = {"model": "m", "messages": [{"role": "user", "content": instruction}]}
    url = f"{env.llm_base_url}/chat/completions"  # type: ignore[attr-defined]
    while httpx.post(url, json=body, timeout=60).status_code >= 500:
        pass
    raise RuntimeError("the agent's own bug")


def test_an_llm_that_answered_after_a_5xx_leaves_the_error_the_agent_s(tmp_path: Path) -> None:
    asked = []

    def once_busy(request: ChatRequest) -> Fail | Reply:
        asked.append(request)
        return Fail(503, "busy") if len(asked) == 1 else Reply(content="hello")

    store = str(tmp_path / "r.db")
    with StubLLM(once_busy) as llm:
        code, _, err = replay(
            "run", CASE, "--run", "own", "--store", store, "--llm-url", llm.openai_base_url,
            "--agent", "tests.cli.test_llm_down:flaky_then_crash", *AGENT[2:],
        )  # fmt: skip
    assert code == ExitCode.FAILED, err
    (trial,) = Store(store).trials("own")
    assert (trial.verdict, trial.cause) == ("error", "agent")
