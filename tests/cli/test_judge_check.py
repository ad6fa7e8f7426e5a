"""`replay judge-check`: stub judges nobody would trust are found, and stay advisory."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path

import pytest
import yaml

from examples.shop import naive_refund_policy, refund_policy
from replay import Store
from replay.results import calibrated_judges
from replay.stub_llm import ChatRequest, Reply, ScriptedPolicy, StubLLM
from tests.helpers import REPO, replay

DEMO = REPO / "examples" / "shop" / "cases" / "refund-4812.yaml"
AGENT = ["--agent", "examples.shop:agent", "--tools", "examples.shop:make_tools"]
CAREFUL = "idempotency_key='refund-4812'"
"""What the careful agent's refund call carries and the naive one's lacks."""


def judged(pointwise: Callable[[str], str], pairwise: Callable[[str, str], str]) -> object:
    """A stub judge: ``pointwise(transcript) -> verdict``, ``pairwise(a, b) -> choice``."""

    def policy(request: ChatRequest) -> Reply:
        system = request.messages[0]["content"]
        text = request.messages[-1]["content"]
        if "candidate A and candidate B" in system:
            a, _, b = text.partition("=== Candidate B ===")
            answer = {"choice": pairwise(a, b), "reason": "stub"}
        else:
            answer = {"verdict": pointwise(text), "reason": "stub"}
        return Reply(content=json.dumps(answer))

    return policy


def careful(text: str) -> str:
    return "pass" if CAREFUL in text else "fail"


def prefers_careful(a: str, b: str) -> str:
    return "A" if CAREFUL in a and CAREFUL not in b else "B" if CAREFUL in b else "unknown"


FAIR = judged(careful, prefers_careful)
"""Judges what the agent did: its verdicts and preferences ignore order, length and style."""
FIRST = judged(careful, lambda a, b: "A")
"""Agrees with people on each trial, but always prefers the first candidate."""


def answer_longer_than(n: int) -> Callable[[str], str]:
    def verdict(text: str) -> str:
        answer = text.rpartition("Final answer to the user:\n")[2]
        return "pass" if len(answer) > n else "fail"

    return verdict


LONG = judged(answer_longer_than(200), lambda a, b: "unknown")
"""Passes a long answer, whatever it says."""


@pytest.fixture
def case(tmp_path: Path) -> str:
    data = yaml.safe_load(DEMO.read_text())
    data["fixture"] = str((DEMO.parent / data["fixture"]).resolve())
    data["rubric"] = [{"name": "care", "criteria": "The refund is issued once, safely."}]
    path = tmp_path / "refund-judged.yaml"
    path.write_text(yaml.safe_dump(data))
    return str(path)


def run(
    case: str, store: str, name: str, agent: ScriptedPolicy, judge: object, *extra: str
) -> None:
    """A judged run of the demo agent (judge model judge-1), every trial labelled as given."""
    with StubLLM(agent) as llm, StubLLM(judge) as judge_llm:  # type: ignore[arg-type]
        code, _, err = replay(
            "run", case, "--run", name, "--llm-url", llm.openai_base_url, "--store", store,
            "--judge-url", judge_llm.openai_base_url, "--judge-model", "judge-1", *AGENT,
            "--measure", *extra,
        )  # fmt: skip
    assert code == 0, err


def label(store: str, name: str, verdict: str, n: int) -> None:
    for idx in range(n):
        assert replay("label", name, f"refund-4812#{idx}", verdict, "--store", store)[0] == 0


def check(store: str, judge: object, *args: str) -> tuple[int, str, str]:
    with StubLLM(judge) as judge_llm:  # type: ignore[arg-type]
        return replay(
            "judge-check", *args, "--store", store,
            "--judge-url", judge_llm.openai_base_url, "--judge-model", "judge-1",
        )  # fmt: skip


def two_agents(case: str, store: str, judge: object) -> None:
    """Runs `careful` (labelled pass) and `naive` (labelled fail) of one case, two trials each."""
    run(case, store, "careful", refund_policy(), judge, "-k", "2")
    run(case, store, "naive", naive_refund_policy(), judge, "-k", "2")
    label(store, "careful", "pass", 2)
    label(store, "naive", "fail", 2)


def calibrated(store: str) -> set[str]:
    return {model for model, _ in calibrated_judges(Store(store), min_labels=4) or ()}


def test_a_judge_preferring_the_first_candidate_is_found_and_stays_advisory(
    case: str, tmp_path: Path
) -> None:
    store = str(tmp_path / "results.db")
    two_agents(case, store, FIRST)
    assert calibrated(store) == {"judge-1"}  # its verdicts agree with all 4 labels
    code, out, _ = check(store, FIRST, "careful", "naive", "--json")
    assert code == 1
    result = json.loads(out)
    probes = {p["name"]: p for p in result["probes"]}
    assert probes["position"]["rate"] == 1.0 and probes["position"]["n"] == 2
    low, high = probes["position"]["interval"]
    assert 0.0 < low < 1.0 == high
    assert probes["length"]["rate"] == probes["style"]["rate"] == 0.0
    assert result["kappa"] == 1.0 and result["tpr"] == result["tnr"] == 1.0
    assert result["reason"] == "advisory: judge-check found position flip rate 1.00 > 0.1"
    assert calibrated(store) == set()  # whatever its agreement
    _, out, _ = replay("judge-agreement", "careful", "--store", store, "--min-labels", "4")
    assert "care: advisory: judge-check found position flip rate 1.00 > 0.1" in out
    _, out, _ = replay(
        "judge-agreement", "careful", "--store", store, "--min-labels", "4", "--json"
    )
    (row,) = json.loads(out)["dimensions"]
    assert row["calibrated"] is False and row["agreement"] == 1.0
    assert row["advisory"] == "advisory: judge-check found position flip rate 1.00 > 0.1"
    assert row["judge_check"]["passed"] is False


def test_a_judge_preferring_longer_answers_is_found_and_stays_advisory(
    case: str, tmp_path: Path
) -> None:
    store = str(tmp_path / "results.db")
    run(case, store, "r", refund_policy(), LONG, "-k", "4")
    label(store, "r", "fail", 4)  # the answer is short: the judge failed them, as people do
    assert calibrated(store) == {"judge-1"}
    code, out, _ = check(store, LONG, "r")
    assert code == 1
    assert "failed: advisory: judge-check found length flip rate 1.00 > 0.1" in out
    assert "stays advisory" in out
    assert "position: not measured: no two labelled trials" in out  # one agent: one answer
    assert calibrated(store) == set()
    (stored,) = Store(store).judge_checks().values()
    assert not stored.passed and stored.runs == ("r",) and stored.model == "judge-1"


def test_an_unbiased_judge_passes_and_stays_calibrated(case: str, tmp_path: Path) -> None:
    store = str(tmp_path / "results.db")
    two_agents(case, store, FAIR)
    code, out, err = check(store, FAIR, "careful", "naive", "--json")
    assert code == 0, err
    result = json.loads(out)
    assert result["passed"] is True and result["reason"] == ""
    rates = {p["name"]: (p["status"], p["rate"]) for p in result["probes"]}
    assert rates["position"] == rates["length"] == rates["style"] == ("measured", 0.0)
    assert rates["self-preference"][0] == "not flagged"  # judge-1's family is no agent's
    assert calibrated(store) == {"judge-1"}
    code, out, _ = check(store, FAIR, "careful", "naive")
    assert code == 0 and "passed: every probe measured at or under 0.1" in out


def test_a_failed_check_is_lifted_by_the_next_that_passes(case: str, tmp_path: Path) -> None:
    store = str(tmp_path / "results.db")
    two_agents(case, store, FAIR)
    assert check(store, FIRST, "careful", "naive")[0] == 1
    assert calibrated(store) == set()
    # One run alone has no two trials that read differently: position is not measured,
    # and a check that cannot see the bias does not lift it.
    code, out, _ = check(store, FAIR, "careful")
    assert code == 1 and "position flip rate 1.00 > 0.1 (an earlier check" in out
    assert calibrated(store) == set()
    assert check(store, FAIR, "careful", "naive")[0] == 0  # measured again, and under
    assert calibrated(store) == {"judge-1"}


def test_a_check_that_can_measure_nothing_is_inconclusive_not_passed(
    case: str, tmp_path: Path
) -> None:
    store = str(tmp_path / "results.db")
    two_agents(case, store, FAIR)
    unsure = judged(lambda text: "unknown", lambda a, b: "unknown")
    code, out, _ = check(store, unsure, "careful", "naive")
    assert code == 3 and "inconclusive: no probe could measure anything" in out
    assert calibrated(store) == {"judge-1"}  # nothing seen: nothing lifted, nothing laid


def test_a_judge_of_the_agents_family_is_flagged(case: str, tmp_path: Path) -> None:
    store = str(tmp_path / "results.db")
    run(case, store, "r", refund_policy(), FAIR, "--model", "gpt-4o")
    label(store, "r", "pass", 1)
    with StubLLM(FAIR) as judge_llm:  # type: ignore[arg-type]
        code, out, _ = replay(
            "judge-check", "r", "--store", store, "--json",
            "--judge-url", judge_llm.openai_base_url, "--judge-model", "gpt-4.1-mini",
        )  # fmt: skip
    assert code == 0
    (probe,) = [p for p in json.loads(out)["probes"] if p["name"] == "self-preference"]
    assert probe["status"] == "flagged, not measured" and probe["rate"] is None
    assert "every labelled trial's agent are gpt models" in probe["note"]


@pytest.mark.parametrize(
    ("args", "says"),
    [
        (["nope"], "no run 'nope' in"),
        (["r", "--max-flip", "2"], "between 0 and 1"),
        (["r", "--restate-url", "http://127.0.0.1:9/v1"], "go together"),
    ],
    ids=["unknown-run", "max-flip", "restate-half"],
)
def test_bad_input_is_one_line_and_exit_2(
    tmp_path: Path, case: str, args: list[str], says: str
) -> None:
    store = str(tmp_path / "results.db")
    run(case, store, "r", refund_policy(), FAIR)
    code, out, err = check(store, FAIR, *args)
    assert code == 2 and out == "" and err.count("\n") == 1 and says in err


def test_a_run_without_labels_is_bad_input(case: str, tmp_path: Path) -> None:
    store = str(tmp_path / "results.db")
    run(case, store, "r", refund_policy(), FAIR)
    code, _, err = check(store, FAIR, "r")
    assert code == 2 and err.count("\n") == 1 and "replay label" in err
