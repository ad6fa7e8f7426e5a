"""Partial credit that says what it counts: which assertions held, and how the shares spread."""

from __future__ import annotations

import json
import statistics
from pathlib import Path

import pytest

from examples.shop import refund_policy
from replay import GradeRecord, Store, Suite, TrialRecord
from replay.graders import Verdict
from replay.stub_llm import StubLLM
from tests.helpers import REPO, replay

AGENT = ["--agent", "examples.shop:agent", "--tools", "examples.shop:make_tools"]
HELD = ["refunds.count(order_id=4812) == 1", 'orders[4812].status == "refunded"']
FAILS = "emails.count(customer_id=17) == 2"  # the demo agent sends one email, not two


def write_case(directory: Path, scoring: str) -> Path:
    (directory / "fixture.sql").write_text((REPO / "examples/shop/fixture.sql").read_text())
    lines = "\n".join(f"  - {json.dumps(a)}" for a in [*HELD, FAILS])
    path = directory / f"{scoring}.yaml"
    path.write_text(
        f"id: refund-{scoring}\nsuite: regression\nexpects: act\n"
        "instruction: Refund order 4812 and notify the customer.\n"
        f"fixture: fixture.sql\nscoring: {scoring}\nassert:\n{lines}\n"
    )
    return path


def test_a_weighted_trial_records_which_assertions_held(tmp_path: Path) -> None:
    store = str(tmp_path / "results.db")
    with StubLLM(refund_policy()) as llm:
        for scoring in ("weighted", "all_pass"):
            replay(
                "run", str(write_case(tmp_path, scoring)), "--run", scoring, "-k", "2",
                "--llm-url", llm.openai_base_url, "--store", store, *AGENT,
            )  # fmt: skip
    for trial in Store(store).trials("weighted"):
        credit = trial.partial_credit
        assert credit is not None
        assert credit.share == pytest.approx(2 / 3)
        assert credit.held == tuple(HELD) and credit.failed == (FAILS,)
        assert credit.describe() == f"2/3 assertions held; failed: {FAILS}"
        (state,) = [g for g in trial.grades if g.grader == "state"]
        assert state.score == pytest.approx(2 / 3) and state.partial_credit == credit
    cassette = str(Store(store).trials("weighted")[0].cassette)
    _, out, _ = replay("grade", cassette, "--case", str(tmp_path / "weighted.yaml"))
    assert f"  state: fail (2/3 assertions held; failed: {FAILS})" in out
    # all_pass needs every assertion: the share is not what it counts, and is not recorded
    assert all(t.partial_credit is None for t in Store(store).trials("all_pass"))

    code, out, _ = replay("report", "weighted", "--store", store, "--json")
    assert code == 0
    data = json.loads(out)
    (case,) = data["cases"]
    spread = case["partial_credit"]
    assert spread["trials"] == 2
    for key in ("mean", "min", "q1", "median", "q3", "max"):
        assert spread[key] == pytest.approx(2 / 3)
    assert data["partial_credit"]["mean"] == pytest.approx(2 / 3)
    for trial in data["trials"]:
        assert trial["partial_credit"] == {
            "share": pytest.approx(2 / 3),
            "held": HELD,
            "failed": [FAILS],
        }
    _, out, _ = replay("report", "all_pass", "--store", store, "--json")
    assert json.loads(out)["partial_credit"] is None
    _, out, _ = replay("report", "weighted", "--store", store)
    assert "partial credit (assertions held; pass^k stays the verdict): mean 0.67" in out
    page = tmp_path / "weighted.html"
    replay("report", "weighted", "--store", store, "--html", str(page))
    html = page.read_text()
    assert "2/3 assertions held" in html and 'class="partial-credit"' in html


SHARES = {"a": [0.0, 0.25, 0.5, 1.0, 1.0], "b": [0.75, 0.75, 1.0], "c": [1 / 3]}


def test_the_report_spreads_the_stored_shares(tmp_path: Path) -> None:
    store = Store(tmp_path / "r.db")
    store.start_run("r", {}, {})
    for case, shares in SHARES.items():
        for idx, share in enumerate(shares):
            grade = GradeRecord(
                "state",
                Verdict.PASS if share == 1 else Verdict.FAIL,
                share,
                meta={"held": ["x"] * round(share * 12), "failed": ["y"] * round((1 - share) * 12)},
            )
            store.add_trial(
                "r",
                TrialRecord(
                    case_id=case,
                    idx=idx,
                    suite=Suite.REGRESSION,
                    verdict=grade.verdict,
                    score=share,
                    grades=(grade,),
                ),
            )
    # a trial kept out of pass rates is kept out of the shares too
    unsupported = GradeRecord("state", Verdict.FAIL, 0.0, meta={"held": [], "failed": ["y"]})
    store.add_trial(
        "r",
        TrialRecord(case_id="c", idx=9, verdict=Verdict.UNSUPPORTED, grades=(unsupported,)),
    )
    _, out, _ = replay("report", "r", "--store", str(store.path), "--json")
    data = json.loads(out)
    stored = {
        t.case_id: [g.score for g in t.grades]
        for t in store.trials("r")
        if t.verdict is not Verdict.UNSUPPORTED
    }
    assert stored.keys() == SHARES.keys()
    every = sorted(s for shares in SHARES.values() for s in shares)
    q1, median, q3 = statistics.quantiles(every, n=4, method="inclusive")
    whole = data["partial_credit"]
    assert whole["trials"] == len(every) and whole["cases"] == 3
    assert whole["mean"] == pytest.approx(statistics.fmean(every))
    assert (whole["min"], whole["max"]) == (min(every), max(every))
    assert [whole["q1"], whole["median"], whole["q3"]] == pytest.approx([q1, median, q3])
    means = [statistics.fmean(v) for v in SHARES.values()]
    assert whole["case_mean"] == pytest.approx(statistics.fmean(means))
    for case in data["cases"]:
        shares = SHARES[case["case"]]
        spread = case["partial_credit"]
        assert spread["trials"] == len(shares)
        assert spread["mean"] == pytest.approx(statistics.fmean(shares))
        if len(shares) > 1:
            quartiles = statistics.quantiles(shares, n=4, method="inclusive")
            assert [spread["q1"], spread["median"], spread["q3"]] == pytest.approx(quartiles)
        else:
            assert spread["q1"] == spread["median"] == spread["q3"] == shares[0]
    # the whole-task figure stays the headline
    assert data["suite"]["pass_hat"]["1"] == pytest.approx((2 / 5 + 1 / 3 + 0) / 3)
