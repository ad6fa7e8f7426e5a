"""Tests for the pure metrics: pass@k, pass^k, suite means and their intervals, the old test."""

from __future__ import annotations

import dataclasses
import itertools
import math
import statistics
from collections import Counter
from fractions import Fraction

import pytest
from hypothesis import given
from hypothesis import strategies as st

from replay.results import _metrics
from replay.results._metrics import (
    CaseCounts,
    case_metrics,
    pass_at_k,
    pass_hat_k,
    suite_metrics,
    two_proportion_test,
)
from replay.stats import case_interval, fisher_exact, suite_interval, wilson_interval

# tau-bench, airline domain, gpt-4o: 50 tasks x 4 trials; successes -> number of tasks.
TAU_AIRLINE = {0: 14, 1: 12, 2: 10, 3: 4, 4: 10}


def tau_cases() -> list[CaseCounts]:
    cases = []
    for c, how_many in TAU_AIRLINE.items():
        for i in range(how_many):
            cases.append(CaseCounts(f"c{c}-{i}", {"pass": c, "fail": 4 - c}))
    return cases


def brute_pass_at_k(n: int, c: int, k: int) -> float:
    trials = [True] * c + [False] * (n - c)
    subsets = list(itertools.combinations(trials, k))
    return sum(any(s) for s in subsets) / len(subsets)


def brute_pass_hat_k(n: int, c: int, k: int) -> float:
    trials = [True] * c + [False] * (n - c)
    subsets = list(itertools.combinations(trials, k))
    return sum(all(s) for s in subsets) / len(subsets)


# --- golden -----------------------------------------------------------------------------


def test_tau_bench_airline_pass_hat_k() -> None:
    suite = suite_metrics(tau_cases())
    assert sum(TAU_AIRLINE.values()) == 50
    assert round(suite.pass_hat[1], 4) == 0.4200
    assert round(suite.pass_hat[2], 4) == 0.2733
    assert round(suite.pass_hat[3], 4) == 0.2200
    assert round(suite.pass_hat[4], 4) == 0.2000
    assert suite.pass_at[1] == pytest.approx(suite.pass_hat[1], abs=1e-12)
    assert dict(suite.cases_used) == {1: 50, 2: 50, 3: 50, 4: 50}
    assert suite.totals == {"pass": 84, "fail": 116, "unknown": 0, "unsupported": 0, "error": 0}
    assert suite.excluded == ()
    assert dataclasses.asdict(suite)["cases"][0]["counts"]["case_id"] == "c0-0"


def test_tau_bench_airline_pass_at_k_matches_brute_force() -> None:
    suite = suite_metrics(tau_cases())
    for k in range(1, 5):
        expected = statistics.fmean(
            brute_pass_at_k(4, c, k) for c, m in TAU_AIRLINE.items() for _ in range(m)
        )
        assert suite.pass_at[k] == pytest.approx(expected, abs=1e-12)
    # 1 - 14/50 of the tasks are solved at least once in 4 trials.
    assert suite.pass_at[4] == pytest.approx(36 / 50, abs=1e-12)


@pytest.mark.parametrize("n", range(1, 9))
def test_both_estimators_match_brute_force_over_subsets(n: int) -> None:
    for c in range(n + 1):
        for k in range(1, n + 1):
            assert pass_at_k(n, c, k) == pytest.approx(brute_pass_at_k(n, c, k), abs=1e-12)
            assert pass_hat_k(n, c, k) == pytest.approx(brute_pass_hat_k(n, c, k), abs=1e-12)


# --- properties -------------------------------------------------------------------------


@st.composite
def nck(draw: st.DrawFn, min_n: int = 1, max_n: int = 30) -> tuple[int, int, int]:
    n = draw(st.integers(min_n, max_n))
    return n, draw(st.integers(0, n)), draw(st.integers(1, n))


@given(nck())
def test_estimators_are_ordered(args: tuple[int, int, int]) -> None:
    n, c, k = args
    hat, at = pass_hat_k(n, c, k), pass_at_k(n, c, k)
    assert pass_hat_k(n, c, 1) == pytest.approx(c / n, abs=1e-15)
    assert pass_at_k(n, c, 1) == pytest.approx(c / n, abs=1e-15)
    assert 0.0 <= hat <= c / n + 1e-12
    assert c / n - 1e-12 <= at <= 1.0


@given(nck())
def test_estimators_match_comb_formulas(args: tuple[int, int, int]) -> None:
    n, c, k = args
    assert pass_at_k(n, c, k) == pytest.approx(1 - math.comb(n - c, k) / math.comb(n, k), abs=1e-12)
    assert pass_hat_k(n, c, k) == pytest.approx(math.comb(c, k) / math.comb(n, k), abs=1e-12)


@given(st.integers(1, 30).flatmap(lambda n: st.tuples(st.just(n), st.integers(0, n))))
def test_monotone_in_k(args: tuple[int, int]) -> None:
    n, c = args
    hats = [pass_hat_k(n, c, k) for k in range(1, n + 1)]
    ats = [pass_at_k(n, c, k) for k in range(1, n + 1)]
    assert all(a >= b for a, b in itertools.pairwise(hats))
    assert all(a <= b for a, b in itertools.pairwise(ats))


@given(nck(min_n=1000, max_n=2000))
def test_stable_for_thousands_of_trials(args: tuple[int, int, int]) -> None:
    n, c, k = args
    for estimator, exact in (
        (pass_at_k, 1 - Fraction(math.comb(n - c, k), math.comb(n, k))),
        (pass_hat_k, Fraction(math.comb(c, k), math.comb(n, k))),
    ):
        value = estimator(n, c, k)
        assert 0.0 <= value <= 1.0
        assert value == pytest.approx(float(exact), abs=1e-9)


def test_n_2000_extremes() -> None:
    assert pass_at_k(2000, 1000, 2000) == 1.0
    assert pass_at_k(2000, 0, 1000) == 0.0
    assert pass_hat_k(2000, 2000, 2000) == 1.0
    assert pass_hat_k(2000, 1999, 2000) == 0.0
    assert 0.0 < pass_hat_k(2000, 1990, 500) < 0.1
    assert pass_at_k(2000, 1, 1000) == pytest.approx(0.5, abs=1e-12)


# --- verdict accounting -----------------------------------------------------------------


def test_non_graded_verdicts_stay_out_of_the_denominator() -> None:
    counts = CaseCounts.from_trials("a", ["pass", "pass", "fail", "unknown"] + ["unknown"] * 2)
    assert (counts.n, counts.c, counts.unknown, counts.unsupported, counts.error) == (3, 2, 3, 0, 0)
    metrics = case_metrics(counts)
    assert dict(metrics.pass_hat) == pytest.approx({1: 2 / 3, 2: 1 / 3, 3: 0.0})
    assert dict(metrics.pass_at) == pytest.approx({1: 2 / 3, 2: 1.0, 3: 1.0})


def test_case_counts_normalises_and_validates() -> None:
    counts = CaseCounts("x", Counter({"error": 2}))
    assert dict(counts.verdicts) == {
        "pass": 0,
        "fail": 0,
        "unknown": 0,
        "unsupported": 0,
        "error": 2,
    }
    assert counts == CaseCounts("x", {"error": 2, "pass": 0})
    assert hash(counts) == hash(CaseCounts("x", {"error": 2}))
    assert dataclasses.asdict(counts)["verdicts"]["error"] == 2
    source = {"pass": 1}
    copied = CaseCounts("y", source)
    source["pass"] = 7
    assert copied.c == 1
    with pytest.raises(ValueError, match=r"case 'x': unknown verdicts \['passed'\]"):
        CaseCounts("x", {"passed": 1})
    with pytest.raises(ValueError, match="case 'x': verdict counts must be >= 0"):
        CaseCounts("x", {"fail": -1})


def test_case_without_graded_trials_is_excluded_from_every_k() -> None:
    cases = [
        CaseCounts("full", {"pass": 3, "fail": 1}),
        CaseCounts("short", {"pass": 1, "fail": 1, "error": 5}),
        CaseCounts("broken", {"unsupported": 2, "error": 1, "unknown": 1}),
    ]
    suite = suite_metrics(cases)
    assert suite.excluded == ("broken",)
    assert dict(suite.cases_used) == {1: 2, 2: 2, 3: 1, 4: 1}
    assert suite.pass_hat[1] == pytest.approx((3 / 4 + 1 / 2) / 2)
    assert suite.pass_hat[2] == pytest.approx((3 / 6 + 0.0) / 2)
    assert suite.pass_hat[3] == pytest.approx(1 / 4)
    assert suite.pass_at[2] == pytest.approx((1.0 + 1.0) / 2)
    assert suite.totals == {"pass": 4, "fail": 2, "unknown": 1, "unsupported": 2, "error": 6}
    broken = suite.cases[2]
    assert (broken.pass_at, broken.pass_hat, broken.pass1_ci) == ({}, {}, None)


def test_k_max_caps_or_extends_the_reported_ks() -> None:
    cases = [CaseCounts("a", {"pass": 2, "fail": 1})]
    assert set(suite_metrics(cases, k_max=2).pass_hat) == {1, 2}
    extended = suite_metrics(cases, k_max=5)
    assert dict(extended.cases_used) == {1: 1, 2: 1, 3: 1, 4: 0, 5: 0}
    assert set(extended.pass_at) == set(extended.pass_hat) == {1, 2, 3}


def test_empty_suite() -> None:
    suite = suite_metrics([])
    assert (suite.pass_at, suite.pass_hat, suite.cases_used, suite.pass1_ci) == ({}, {}, {}, None)


# --- intervals and tests ----------------------------------------------------------------


def test_wilson_known_value_and_bounds() -> None:
    low, high = wilson_interval(8, 10)
    assert (round(low, 4), round(high, 4)) == (0.4902, 0.9433)
    assert wilson_interval(0, 5)[0] == 0.0
    assert wilson_interval(5, 5)[1] == 1.0


@given(st.lists(st.tuples(st.integers(0, 20), st.integers(0, 20)), min_size=1, max_size=40))
def test_suite_interval_contains_the_mean(trials: list[tuple[int, int]]) -> None:
    cases = [CaseCounts(str(i), {"pass": p, "fail": f}) for i, (p, f) in enumerate(trials)]
    suite = suite_metrics(cases)
    if all(p + f == 0 for p, f in trials):
        assert suite.pass1_ci is None
        return
    assert suite.pass1_ci is not None
    low, high = suite.pass1_ci
    assert 0.0 <= low <= suite.pass_hat[1] <= high <= 1.0
    for m in suite.cases:
        if m.pass1_ci is not None:
            assert 0.0 <= m.pass1_ci[0] <= m.pass_hat[1] <= m.pass1_ci[1] <= 1.0


def test_suite_interval_is_over_cases_and_wider_than_the_normal_one_near_the_ends() -> None:
    """pass^1's interval resamples cases (``suite_interval`` of their rates); one case: Wilson."""
    suite = suite_metrics(tau_cases())
    rates = [c / 4 for c, m in TAU_AIRLINE.items() for _ in range(m)]
    assert suite.pass1_ci == suite_interval(rates)
    half = 1.96 * statistics.stdev(rates) / math.sqrt(50)
    low, high = suite.pass1_ci
    assert low < 0.42 - half + 0.01 and high > 0.42 + half  # t-adjusted: a bit wider
    assert suite.pass1_se == pytest.approx(statistics.stdev(rates) / math.sqrt(50))
    single = suite_metrics([CaseCounts("only", {"pass": 8, "fail": 2})])
    assert single.pass1_ci == wilson_interval(8, 10)
    assert single.pass_hat_ci[4] == case_interval(8, 10, 4)


def test_two_proportion_identical_and_different() -> None:
    assert two_proportion_test(50, 100, 50, 100) == pytest.approx(1.0)
    assert two_proportion_test(2, 4, 2, 4) == pytest.approx(1.0)
    p = two_proportion_test(90, 100, 60, 100)
    assert p < 0.05
    assert p == pytest.approx(math.erfc(0.3 / math.sqrt(0.75 * 0.25 * 0.02) / math.sqrt(2)))


def test_two_proportion_uses_fisher_for_tiny_samples(monkeypatch: pytest.MonkeyPatch) -> None:
    assert two_proportion_test(3, 4, 1, 4) == pytest.approx(34 / 70)  # 0.4857...
    assert round(two_proportion_test(3, 4, 1, 4), 4) == 0.4857
    assert two_proportion_test(0, 5, 5, 5) == pytest.approx(2 / 252)
    # scipy.stats.fisher_exact([[1, 9], [11, 3]]) -> 0.002759...; here the z-test path would
    # be taken (every expected count is >= 5) and says 0.000925: too small, as expected.
    assert fisher_exact(1, 10, 11, 14) == pytest.approx(0.0027594, abs=1e-7)
    assert two_proportion_test(1, 10, 11, 14) < fisher_exact(1, 10, 11, 14)
    assert two_proportion_test(0, 30, 0, 30) == 1.0
    calls: list[tuple[int, ...]] = []

    def spy(*args: int) -> float:
        calls.append(args)
        return 0.5

    monkeypatch.setattr(_metrics, "fisher_exact", spy)
    two_proportion_test(3, 4, 1, 4)
    two_proportion_test(90, 100, 60, 100)
    assert calls == [(3, 4, 1, 4)]


@given(nck(max_n=40).map(lambda a: a[:2]), nck(max_n=40).map(lambda a: a[:2]))
def test_two_proportion_is_a_symmetric_probability(a: tuple[int, int], b: tuple[int, int]) -> None:
    (n1, c1), (n2, c2) = a, b
    p = two_proportion_test(c1, n1, c2, n2)
    assert 0.0 <= p <= 1.0
    assert p == pytest.approx(two_proportion_test(c2, n2, c1, n1), abs=1e-12)


# --- errors -----------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("n", "c", "k", "message"),
    [
        (4, 2, 5, r"k must satisfy 1 <= k <= n \(got k=5, n=4\)"),
        (4, 2, 0, r"k must satisfy 1 <= k <= n \(got k=0, n=4\)"),
        (4, 2, -1, r"k must satisfy 1 <= k <= n \(got k=-1, n=4\)"),
        (4, 5, 1, r"c must satisfy 0 <= c <= n \(got c=5, n=4\)"),
        (4, -1, 1, r"c must satisfy 0 <= c <= n \(got c=-1, n=4\)"),
        (0, 0, 1, r"n must be >= 1 \(got n=0\)"),
        (-3, 0, 1, r"n must be >= 1 \(got n=-3\)"),
    ],
)
def test_bad_arguments_are_rejected(n: int, c: int, k: int, message: str) -> None:
    with pytest.raises(ValueError, match=message):
        pass_at_k(n, c, k)
    with pytest.raises(ValueError, match=message):
        pass_hat_k(n, c, k)


def test_other_bad_arguments() -> None:
    counts = CaseCounts("a", {"pass": 1, "fail": 1})
    with pytest.raises(ValueError, match=r"k must be >= 1 \(got k=0\)"):
        case_metrics(counts, [0, 1])
    assert set(case_metrics(counts, [1, 2, 3]).pass_at) == {1, 2}
    with pytest.raises(ValueError, match=r"duplicate case ids: \['a'\]"):
        suite_metrics([counts, counts])
    with pytest.raises(ValueError, match=r"k_max must be >= 1 \(got k_max=0\)"):
        suite_metrics([counts], k_max=0)
    with pytest.raises(ValueError, match=r"n2 must be >= 1 \(got n2=0\)"):
        two_proportion_test(1, 2, 0, 0)
    with pytest.raises(ValueError, match=r"c1 must satisfy 0 <= c1 <= n1 \(got c1=3, n1=2\)"):
        two_proportion_test(3, 2, 0, 1)
