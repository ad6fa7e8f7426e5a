"""Balanced suites: cases that expect the agent to act or to refrain, counted and reported apart."""

from __future__ import annotations

import json
from math import comb
from pathlib import Path

import pytest

from examples.shop import refund_policy
from examples.shop.policy import over_refund_policy
from replay import Expects, Store, Suite, TrialRecord, load_case, suite_balance, suite_health
from replay.graders import Verdict
from replay.stub_llm import StubLLM
from tests.helpers import REPO, replay

CASES = REPO / "examples" / "shop" / "cases"
AGENT = ["--agent", "examples.shop:agent", "--tools", "examples.shop:make_tools"]


def store_with(path: Path, cases: dict[str, tuple[Expects | None, str]]) -> Store:
    """One run ``r`` of regression cases: each case's direction and its verdicts (p/f/e)."""
    store = Store(path)
    store.start_run("r", {}, {})
    for case, (expects, verdicts) in cases.items():
        for idx, letter in enumerate(verdicts):
            verdict = {"p": Verdict.PASS, "f": Verdict.FAIL, "e": Verdict.ERROR}[letter]
            store.add_trial(
                "r",
                TrialRecord(
                    case_id=case,
                    idx=idx,
                    suite=Suite.REGRESSION,
                    verdict=verdict,
                    expects=expects,
                ),
            )
    return store


ACT, REFRAIN = Expects.ACT, Expects.REFRAIN


def test_one_refrain_case_among_five_is_unbalanced(tmp_path: Path) -> None:
    lopsided = {f"act-{i}": (ACT, "pp") for i in range(4)} | {"refuse": (REFRAIN, "pp")}
    store = store_with(tmp_path / "lopsided.db", {**lopsided, "old": (None, "pp")})
    (balance,) = suite_balance(store)
    assert (balance.suite, balance.act, balance.refrain, balance.undeclared) == (
        "regression",
        4,
        1,
        1,
    )
    (flag,) = [f for f in suite_health(store) if f.kind == "unbalanced"]
    assert flag.subject == "regression"
    assert "act 4, refrain 1, undeclared 1: refrain cases are under 33% of the 5" in flag.evidence
    code, out, _ = replay("suite-health", "--store", str(store.path))
    assert code == 0
    assert "balance: regression: act 4, refrain 1, undeclared 1" in out
    assert "unbalanced: regression: act 4, refrain 1, undeclared 1" in out


def test_a_balanced_suite_is_not_flagged(tmp_path: Path) -> None:
    cases = {f"act-{i}": (ACT, "p") for i in range(3)} | {
        f"no-{i}": (REFRAIN, "p") for i in range(2)
    }
    store = store_with(tmp_path / "balanced.db", cases)
    assert not [f for f in suite_health(store) if f.kind == "unbalanced"]
    code, out, _ = replay("suite-health", "--store", str(store.path))
    assert code == 0 and "balance: regression: act 3, refrain 2, undeclared 0" in out
    assert "unbalanced" not in out
    # Undeclared cases are counted apart: they tip no side, and alone are flagged by nobody.
    only_undeclared = store_with(tmp_path / "undeclared.db", {"a": (None, "p"), "b": (None, "f")})
    assert not [f for f in suite_health(only_undeclared) if f.kind == "unbalanced"]
    _, out, _ = replay("suite-health", "--store", str(only_undeclared.path))
    assert "balance: regression: act 0, refrain 0, undeclared 2" in out
    # A stricter --min-side flags the 3/2 suite.
    _, out, _ = replay("suite-health", "--store", str(store.path), "--min-side", "0.45")
    assert "unbalanced: regression: act 3, refrain 2, undeclared 0: refrain cases" in out


def _pass_hat(trials: str, k: int) -> float:
    n, c = trials.count("p") + trials.count("f"), trials.count("p")
    return comb(c, k) / comb(n, k)


def test_report_gives_pass_hat_k_per_direction(tmp_path: Path) -> None:
    cases = {
        "refund": (ACT, "pppf"),
        "cancel": (ACT, "pfff"),
        "ship": (ACT, "pppp"),
        "refuse": (REFRAIN, "ppfe"),  # the error is counted, kept out of n
        "abstain": (REFRAIN, "pppp"),
        "legacy": (None, "pf"),
    }
    store = store_with(tmp_path / "r.db", cases)
    code, out, _ = replay("report", "r", "--store", str(store.path), "--json")
    assert code == 0
    data = json.loads(out)
    directions = data["directions"]
    assert list(directions) == ["act", "refrain", "undeclared"]
    for name, expects in (("act", ACT), ("refrain", REFRAIN), ("undeclared", None)):
        mine = [v for e, v in cases.values() if e is expects]
        assert directions[name]["cases"] == len(mine)
        top = min(v.count("p") + v.count("f") for v in mine)
        for k in range(1, top + 1):
            by_hand = sum(_pass_hat(v, k) for v in mine) / len(mine)
            assert directions[name]["pass_hat"][str(k)] == pytest.approx(by_hand)
            low, high = directions[name]["pass_hat_interval"][str(k)]
            assert 0 <= low <= by_hand <= high <= 1
    # refrain: refuse has 3 graded trials, so k=4 is abstain's alone
    assert directions["refrain"]["cases_used"]["4"] == 1
    assert {c["case"]: c["expects"] for c in data["cases"]}["legacy"] == "undeclared"
    assert {t["expects"] for t in data["trials"] if t["case"] == "refuse"} == {"refrain"}
    code, out, _ = replay("report", "r", "--store", str(store.path))
    assert "act pass^k (3 cases, 95% interval): k=1 " in out
    assert "refrain pass^k (2 cases, 95% interval): k=1 " in out
    page = tmp_path / "r.html"
    replay("report", "r", "--store", str(store.path), "--html", str(page))
    assert 'class="directions"' in page.read_text()


def test_a_run_stores_each_trials_direction(tmp_path: Path) -> None:
    store = str(tmp_path / "results.db")
    for case, policy in (
        ("refund-4812", refund_policy),
        ("refund-4812-too-much", over_refund_policy),
    ):
        with StubLLM(policy()) as llm:
            code, _, _ = replay(
                "run", str(CASES / f"{case}.yaml"), "--run", case, "-k", "2",
                "--llm-url", llm.openai_base_url, "--store", store, *AGENT,
            )  # fmt: skip
        assert code == 0, case  # the demo agent passes both: it refunds, and it refuses
    results = Store(store)
    assert {t.expects for t in results.trials("refund-4812")} == {Expects.ACT}
    assert {t.expects for t in results.trials("refund-4812-too-much")} == {Expects.REFRAIN}
    code, out, _ = replay("suite-health", "--store", store)
    assert "balance: regression: act 1, refrain 1, undeclared 0" in out


def test_the_demo_cases_declare_their_direction() -> None:
    directions = {load_case(p).id: load_case(p).expects for p in sorted(CASES.glob("*.yaml"))}
    assert directions == {
        "refund-4812": ACT,
        "refund-4812-refund-down": ACT,
        "refund-4812-retried": ACT,
        "refund-4812-too-much": REFRAIN,
        "refund-chat": ACT,
    }
