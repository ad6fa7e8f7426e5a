"""Agreement between people: the figures match the standard implementations on fixed data."""

from __future__ import annotations

import random
from pathlib import Path

import pytest

from replay import Store, TrialRecord, krippendorff_alpha, label_agreement, suite_health
from replay.graders import Verdict

sklearn_metrics = pytest.importorskip("sklearn.metrics", reason="scikit-learn is a dev dependency")
krippendorff = pytest.importorskip("krippendorff", reason="krippendorff is a dev dependency")

ANA = "pfppfpppffpfppfpfppp"
"""Ana's labels of 20 trials (p: pass, f: fail)."""
BEN = "pfpfffppffpfpppppfpp"
CAL = "ppppf?pp?fpfpf?pfpp?"
"""Cal's, with ? where Cal did not label (or was unsure)."""

_VERDICT = {"p": "pass", "f": "fail", "?": "unsure"}


def labelled_store(tmp_path: Path, *people: tuple[str, str]) -> Store:
    store = Store(tmp_path / "results.db")
    store.start_run("r", {}, {})
    for idx in range(len(ANA)):
        store.add_trial("r", TrialRecord(case_id=f"c{idx % 4}", idx=idx, verdict=Verdict.PASS))
    for name, labels in people:
        for idx, said in enumerate(labels):
            store.add_label("r", f"c{idx % 4}", idx, _VERDICT[said], labeller=name)
    return store


def test_two_labellers_kappa_and_alpha_match_sklearn_and_krippendorff(tmp_path: Path) -> None:
    store = labelled_store(tmp_path, ("ana", ANA), ("ben", BEN))
    result = label_agreement(store, "r")
    assert result.labellers == ("ana", "ben") and result.units == 20
    assert result.kappa == pytest.approx(sklearn_metrics.cohen_kappa_score(list(ANA), list(BEN)))
    reliability = [[1.0 if c == "p" else 0.0 for c in row] for row in (ANA, BEN)]
    expected = krippendorff.alpha(reliability_data=reliability, level_of_measurement="nominal")
    assert result.alpha == pytest.approx(expected)
    differ = [i for i, (a, b) in enumerate(zip(ANA, BEN, strict=True)) if a != b]
    assert [(d.case_id, d.idx) for d in result.disagreements] == sorted(
        (f"c{i % 4}", i) for i in differ
    )
    assert result.agreement == pytest.approx(1 - len(differ) / 20)


def test_three_labellers_with_gaps_alpha_matches_krippendorff(tmp_path: Path) -> None:
    store = labelled_store(tmp_path, ("ana", ANA), ("ben", BEN), ("cal", CAL))
    result = label_agreement(store, "r")
    assert result.kappa is None  # Cohen's kappa is for two
    reliability = [
        [{"p": 1.0, "f": 0.0}.get(c, float("nan")) for c in row] for row in (ANA, BEN, CAL)
    ]
    expected = krippendorff.alpha(reliability_data=reliability, level_of_measurement="nominal")
    assert result.alpha == pytest.approx(expected)


def test_alpha_matches_krippendorff_on_seeded_random_data() -> None:
    rng = random.Random(7)
    for _ in range(50):
        raters, units = rng.randint(2, 5), rng.randint(3, 30)
        rows = [
            [
                rng.choice([0.0, 1.0, 2.0]) if rng.random() > 0.2 else float("nan")
                for _ in range(units)
            ]
            for _ in range(raters)
        ]
        columns = [[row[u] for row in rows if row[u] == row[u]] for u in range(units)]
        ours = krippendorff_alpha(columns)
        if ours is None:
            continue
        theirs = krippendorff.alpha(reliability_data=rows, level_of_measurement="nominal")
        assert ours == pytest.approx(theirs)


def test_the_cases_people_disagree_on_are_flagged_ambiguous(tmp_path: Path) -> None:
    store = labelled_store(tmp_path, ("ana", ANA[:4]), ("ben", "pfpf"))  # they differ on #3
    flags = [f for f in suite_health(store) if f.kind == "ambiguous"]
    assert [(f.subject, "r c3#3" in f.evidence) for f in flags] == [("c3", True)]


def test_unsure_labels_and_one_labeller_compare_nothing(tmp_path: Path) -> None:
    store = labelled_store(tmp_path, ("ana", ANA), ("ben", "?" * 20))
    result = label_agreement(store, "r")
    assert (result.units, result.kappa, result.alpha, result.disagreements) == (0, None, None, ())
