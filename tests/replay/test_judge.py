"""The LLM judge: JSON verdicts, and `unknown` (never pass) for anything else."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from recorder import HttpEvent, read_cassette
from replay import load_case
from replay.graders import Dimension, Judge, Verdict, combine
from replay.graders._judge import parse_verdict
from replay.modes import review
from replay.stub_llm import Fail, JudgePolicy, Reply, StubLLM
from tests.helpers import REPO

CASE = REPO / "examples" / "shop" / "cases" / "refund-4812.yaml"
GOLDEN = REPO / "cassettes" / "refund-4812.cassette"
TONE = Dimension("tone", "The answer says how much was refunded.")


def completion(content: str | None, **message: object) -> bytes:
    return json.dumps(
        {"choices": [{"message": {"role": "assistant", "content": content, **message}}]}
    ).encode()


@pytest.mark.parametrize(
    ("raw", "verdict"),
    [
        (completion('{"verdict": "pass", "reason": "ok"}'), Verdict.PASS),
        (completion('{"verdict": "FAIL", "reason": "no amount"}'), Verdict.FAIL),
        (completion('```json\n{"verdict": "fail", "reason": "x"}\n```'), Verdict.FAIL),
        (completion('{"verdict": "unknown", "reason": "cannot tell"}'), Verdict.UNKNOWN),
        (completion("It passes, I think."), Verdict.UNKNOWN),
        (completion('{"verdict": "yes"}'), Verdict.UNKNOWN),
        (completion('{"verdict": "error"}'), Verdict.UNKNOWN),
        (completion('["pass"]'), Verdict.UNKNOWN),
        (completion(None, refusal="I can't grade this."), Verdict.UNKNOWN),
        (b"<html>bad gateway</html>", Verdict.UNKNOWN),
        (b'{"choices": []}', Verdict.UNKNOWN),
        (b'{"choices": [{"message": "pass"}]}', Verdict.UNKNOWN),
        (completion([{"type": "text", "text": '{"verdict": "pass"}'}]), Verdict.UNKNOWN),  # type: ignore[arg-type]
    ],
)
def test_only_the_json_contract_gives_pass_or_fail(raw: bytes, verdict: Verdict) -> None:
    assert parse_verdict(raw)[0] is verdict


def judged(tmp_path: Path, policy: object, timeout: float = 5.0) -> list:  # type: ignore[type-arg]
    case = load_case(CASE)
    with StubLLM(policy) as stub:  # type: ignore[arg-type]
        judge = Judge(stub.openai_base_url, "judge-1", timeout=timeout, calibrated=None)
        trial = review(case, GOLDEN).trial
        return judge.grade(trial, [TONE, Dimension("brevity", "Short.")], tmp_path / "j.cassette")


def test_a_json_verdict_is_graded_and_stored_with_model_settings_and_rubric_hash(
    tmp_path: Path,
) -> None:
    grades = judged(tmp_path, JudgePolicy(rules=(("Dimension: tone", "pass"),), default="fail"))
    tone, brevity = grades
    assert (tone.grader, tone.verdict, brevity.verdict) == (
        "judge:tone",
        Verdict.PASS,
        Verdict.FAIL,
    )
    assert tone.meta is not None and tone.meta["model"] == "judge-1"
    assert tone.meta["settings"]["temperature"] == 0
    assert tone.meta["rubric_hash"] == TONE.hash != Dimension("tone", "Other.").hash
    # The judge's traffic is recorded like everything else, temperature 0, the key redacted.
    events = [e for e in read_cassette(tmp_path / "j.cassette").events if isinstance(e, HttpEvent)]
    assert len(events) == 2
    body = json.loads(events[0].request.body or b"{}")
    assert body["temperature"] == 0 and "issue_refund" in body["messages"][1]["content"]
    assert b"sk-judge" not in (tmp_path / "j.cassette").read_bytes()


@pytest.mark.parametrize(
    ("policy", "why"),
    [
        (JudgePolicy(style="prose"), "did not answer the JSON verdict"),
        (JudgePolicy(style="refusal"), "did not answer the JSON verdict"),
        (lambda request: Fail(500, "boom"), "HTTP 500"),
        (lambda request: Fail(429, "slow down"), "HTTP 429"),
        (JudgePolicy(delay=3.0), "timed out"),
    ],
    ids=["prose", "refusal", "http-500", "http-429", "timeout"],
)
def test_prose_errors_and_timeouts_are_unknown_never_pass(
    tmp_path: Path, policy: object, why: str
) -> None:
    grades = judged(tmp_path, policy, timeout=0.5)
    assert [g.verdict for g in grades] == [Verdict.UNKNOWN, Verdict.UNKNOWN]
    assert why in grades[0].evidence[0]


def test_an_uncalibrated_judge_is_advisory() -> None:
    from replay.graders import Grade

    state = Grade("state", Verdict.PASS)
    failing = Grade("judge:tone", Verdict.FAIL, ("rude",), advisory=True)
    unsure = Grade("judge:tone", Verdict.UNKNOWN, advisory=True)
    assert combine([state, failing]).verdict is Verdict.PASS
    assert combine([state, unsure]).verdict is Verdict.PASS
    assert combine([state, Grade("judge:tone", Verdict.UNKNOWN)]).verdict is Verdict.UNKNOWN
    assert combine([state, Grade("judge:tone", Verdict.FAIL)]).verdict is Verdict.FAIL
    assert combine([state, failing]).grades[1] is failing  # kept, shown


def test_the_stub_judge_policy_decides_by_rules() -> None:
    from replay.stub_llm import ChatRequest

    def ask(policy: JudgePolicy, text: str) -> Reply:
        return policy(ChatRequest("m", [{"role": "user", "content": text}], [], "openai"))

    policy = JudgePolicy(
        rules=(("refund(ed)? \\$35", "pass"), ("refund", "fail")), default="unknown"
    )
    assert json.loads(ask(policy, "We refunded $35").content or "")["verdict"] == "pass"
    assert json.loads(ask(policy, "a refund of $30").content or "")["verdict"] == "fail"
    assert json.loads(ask(policy, "hello").content or "")["verdict"] == "unknown"
