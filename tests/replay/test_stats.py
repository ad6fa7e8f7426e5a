"""replay.stats against independent implementations (scipy, statsmodels) and by simulation."""

from __future__ import annotations

import math
import random

import pytest
from hypothesis import given
from hypothesis import strategies as st

from bench import stats as simulation
from replay import CaseCounts, Thresholds, compare_counts, suite_metrics
from replay.results._gate import _drop_check
from replay.results._stats import beta_cdf, t_quantile
from replay.stats import (
    benjamini_hochberg,
    case_interval,
    clustered_se,
    detectable,
    fisher_exact,
    naive_se,
    paired_interval,
    suite_interval,
    trial_variance,
    wilson_interval,
)

scipy_stats = pytest.importorskip("scipy.stats", reason="scipy is a dev dependency")
proportion = pytest.importorskip("statsmodels.stats.proportion")
multitest = pytest.importorskip("statsmodels.stats.multitest")
sm = pytest.importorskip("statsmodels.api")


@pytest.mark.parametrize("df", [1, 2, 3, 7, 19, 49, 199, 5000])
@pytest.mark.parametrize("p", [0.6, 0.9, 0.975, 0.995, 0.025])
def test_t_quantile_is_scipys(df: int, p: float) -> None:
    assert t_quantile(p, df) == pytest.approx(scipy_stats.t.ppf(p, df), rel=1e-9, abs=1e-9)


@pytest.mark.parametrize("df", [1, 3, 10, 1000])
@pytest.mark.parametrize("p", [1e-9, 1e-6, 1 - 1e-6, 1 - 1e-9])
def test_t_quantile_is_scipys_far_in_the_tails(df: int, p: float) -> None:
    """(Where the CDF's last bits are all a step can see: a step that lands on ``p``
    exactly is the answer, not the middle of what is left of the bracket.)"""
    assert t_quantile(p, df) == pytest.approx(scipy_stats.t.ppf(p, df), rel=1e-7)


def test_t_quantile_is_scipys_on_random_draws() -> None:
    rng = random.Random(11)
    for _ in range(500):
        p, df = rng.uniform(0.001, 0.999), rng.choice([1, 2, 5, 9, 30, 120, 999, 20_000])
        assert t_quantile(p, df) == pytest.approx(scipy_stats.t.ppf(p, df), rel=1e-9, abs=1e-9)


@pytest.mark.parametrize(("a", "b"), [(0.5, 0.5), (2, 3), (10, 1), (0.5, 30), (100, 200)])
def test_beta_cdf_is_scipys(a: float, b: float) -> None:
    for x in [i / 40 for i in range(41)]:
        assert beta_cdf(x, a, b) == pytest.approx(scipy_stats.beta.cdf(x, a, b), abs=1e-12)


@pytest.mark.parametrize(("c", "n"), [(0, 1), (1, 1), (0, 5), (3, 5), (5, 5), (7, 20), (19, 20)])
@pytest.mark.parametrize("confidence", [0.9, 0.95, 0.99])
def test_wilson_interval_is_statsmodels(c: int, n: int, confidence: float) -> None:
    low, high = proportion.proportion_confint(c, n, alpha=1 - confidence, method="wilson")
    assert wilson_interval(c, n, confidence) == pytest.approx((low, high), abs=1e-12)


def test_a_case_interval_covers_its_pass_hat_k_as_wilson_covers_its_rate() -> None:
    """Mapped through p**k, Wilson's interval is one for pass^k: exact coverage by binomial."""
    for n, k, p in [(4, 2, 0.7), (8, 4, 0.85), (10, 3, 0.4), (2, 2, 0.95)]:
        covered_rate = covered_hat = 0.0
        for c in range(n + 1):
            weight = scipy_stats.binom.pmf(c, n, p)
            covered_rate += weight * wilson_interval(c, n).contains(p)
            covered_hat += weight * case_interval(c, n, k).contains(p**k)
        assert covered_hat >= covered_rate - 1e-12
    interval = case_interval(1, 4, 2)
    assert interval.low == 0.0  # widened to hold the unbiased estimate C(1,2)/C(4,2) = 0
    at_least = case_interval(2, 4, 3, at_least_one=True)
    assert at_least.contains(1 - math.comb(2, 3) / math.comb(4, 3))


@pytest.mark.parametrize(
    ("c1", "n1", "c2", "n2"),
    [(3, 4, 1, 4), (0, 5, 5, 5), (1, 10, 11, 14), (8, 8, 2, 8), (4, 8, 4, 8)],
)
def test_fisher_exact_is_scipys(c1: int, n1: int, c2: int, n2: int) -> None:
    table = [[c1, n1 - c1], [c2, n2 - c2]]
    assert fisher_exact(c1, n1, c2, n2) == pytest.approx(scipy_stats.fisher_exact(table)[1])


def test_benjamini_hochberg_is_statsmodels() -> None:
    rng = random.Random(3)
    for size in (1, 5, 50):
        p_values = [rng.random() ** 3 for _ in range(size)] + [0.01, 0.01, 1.0]
        expected = multitest.multipletests(p_values, alpha=0.1, method="fdr_bh")[1]
        assert benjamini_hochberg(p_values) == pytest.approx(list(expected), abs=1e-12)


def test_clustered_se_is_statsmodels_cluster_robust_and_larger_than_naive() -> None:
    """Trials of a case agree: clustering by case gives the wider standard error."""
    rng = random.Random(5)
    trials, groups, rates = [], [], []
    for case in range(30):
        p = rng.choice([0.0, 0.1, 0.5, 0.9, 1.0])
        outcomes = [float(rng.random() < p) for _ in range(6)]
        trials += outcomes
        groups += [case] * 6
        rates.append(sum(outcomes) / 6)
    fit = sm.OLS(trials, [[1.0]] * len(trials)).fit(
        cov_type="cluster", cov_kwds={"groups": groups, "use_correction": False}
    )
    m = len(rates)  # our SE carries the small-sample factor m/(m-1)
    assert clustered_se(rates) == pytest.approx(fit.bse[0] * math.sqrt(m / (m - 1)), rel=1e-9)
    assert clustered_se(rates) > 1.5 * naive_se(rates, [6] * m)


def test_trial_variance_is_the_binomial_variance_of_the_unbiased_estimate() -> None:
    # 2,000 trials: C(2000, 1000) is past any float, so the weights are summed in logs.
    cases = [(8, 1, 0.3), (8, 4, 0.7), (5, 5, 0.9), (10, 3, 0.5), (2000, 4, 0.5), (1500, 2, 0.9)]
    for trials, k, p in cases:
        values = [math.comb(c, k) / math.comb(trials, k) for c in range(trials + 1)]
        weights = scipy_stats.binom.pmf(range(trials + 1), trials, p)
        mean = sum(w * v for w, v in zip(weights, values, strict=True))
        variance = sum(w * (v - mean) ** 2 for w, v in zip(weights, values, strict=True))
        assert mean == pytest.approx(p**k)
        assert trial_variance(p, trials, k) == pytest.approx(variance, rel=1e-6, abs=1e-12)
    assert trial_variance(0.0, 8, 4) == trial_variance(1.0, 8, 4) == 0.0


def test_detectable_is_the_power_formula() -> None:
    expected = (scipy_stats.t.ppf(0.975, 49) + scipy_stats.norm.ppf(0.8)) * 0.03
    assert detectable(0.03, 0.95, 0.8, 49) == pytest.approx(expected)


@given(st.lists(st.floats(0.0, 1.0), min_size=2, max_size=60))
def test_a_suite_interval_holds_its_mean_inside_zero_and_one(values: list[float]) -> None:
    interval = suite_interval(values)
    mean = math.fsum(values) / len(values)
    assert 0.0 <= interval.low <= mean + 1e-12 and mean - 1e-12 <= interval.high <= 1.0
    assert interval.high > interval.low  # never a point: cases not yet seen could differ


def test_every_case_passing_still_bounds_the_failure_rate_near_z2_over_m() -> None:
    for m in (20, 50, 200):
        low, high = suite_interval([1.0] * m)
        assert high == 1.0
        assert 1 - low == pytest.approx(1.96**2 / (m + 1.96**2), rel=0.15)


@given(
    st.lists(st.tuples(st.floats(0.0, 1.0), st.floats(0.0, 1.0)), min_size=2, max_size=60),
)
def test_a_paired_interval_holds_the_change_and_is_never_a_point(
    pairs: list[tuple[float, float]],
) -> None:
    a, b = [x for x, _ in pairs], [y for _, y in pairs]
    interval = paired_interval(a, b)
    change = (math.fsum(b) - math.fsum(a)) / len(pairs)
    assert interval.low - 1e-9 <= change <= interval.high + 1e-9
    assert interval.high > interval.low


def test_two_identical_runs_are_paired_tighter_than_unpaired_but_not_to_a_point() -> None:
    values = [0.0, 0.25, 0.5, 1.0, 1.0, 0.75] * 5
    low, high = paired_interval(values, values)
    assert low < 0 < high
    a_low, a_high = suite_interval(values)
    assert high - low < a_high - a_low


def test_bad_arguments_are_value_errors() -> None:
    with pytest.raises(ValueError, match="at least 2 cases"):
        suite_interval([0.5])
    with pytest.raises(ValueError, match="differ in length"):
        paired_interval([0.5, 0.5], [0.5])
    with pytest.raises(ValueError, match="confidence"):
        wilson_interval(1, 2, 1.5)
    with pytest.raises(ValueError, match="power"):
        detectable(0.1, 0.95, 1.0, 10)


@pytest.mark.parametrize(
    "values",
    [
        [0.5, 1.5],
        [-0.25, 0.5],
        [0.5, math.nan],
        [math.nan, 0.5, 0.25],
        [math.nan, math.inf],
        [0.5, math.inf],
        [-math.inf, math.inf],
    ],
)
def test_a_suite_interval_refuses_a_value_outside_0_1_nan_included(values: list[float]) -> None:
    with pytest.raises(ValueError, match=r"every value must be in \[0, 1\]"):
        suite_interval(values)


def test_a_suite_interval_is_the_formula_worked_out_beside_it() -> None:
    """The effective-size Wilson interval, t-adjusted, in plain Python with scipy's quantiles
    (to 1e-12: the quantiles are scipy's, not ours)."""
    rng = random.Random(5)
    for _ in range(200):
        values = [rng.choice((0.0, 1.0, rng.random())) for _ in range(rng.randint(2, 60))]
        m = len(values)
        mean = min(1.0, max(0.0, math.fsum(values) / m))
        squares = math.fsum((v - mean) ** 2 for v in values)
        spread = mean * (1 - mean)
        n_eff = spread * m * m / squares if squares > 0 and spread > 0 else float(m)
        z, t = scipy_stats.norm.ppf(0.975), scipy_stats.t.ppf(0.975, m - 1)
        n = n_eff * (z / t) ** 2
        centre = (mean + z * z / (2 * n)) / (1 + z * z / n)
        half = z * math.sqrt(mean * (1 - mean) / n + z * z / (4 * n * n)) / (1 + z * z / n)
        low, high = suite_interval(values)
        assert low == pytest.approx(max(0.0, centre - half), abs=1e-12)
        assert high == pytest.approx(min(1.0, centre + half), abs=1e-12)


def test_suite_metrics_give_an_interval_for_every_k() -> None:
    cases = [CaseCounts(f"c{i}", {"pass": i % 5, "fail": 4 - i % 5}) for i in range(20)]
    suite = suite_metrics(cases)
    assert set(suite.pass_hat_ci) == set(suite.pass_at_ci) == {1, 2, 3, 4}
    for k in suite.pass_hat:
        assert suite.pass_hat_ci[k].contains(suite.pass_hat[k])
        assert suite.pass_at_ci[k].contains(suite.pass_at[k])
    assert suite.pass1_ci == suite.pass_hat_ci[1]
    assert suite.pass1_se is not None and suite.pass1_se_naive is not None
    assert "Wilson" in suite.method


# The fast version of bench/stats.py: fewer suites, the same seeded populations.


SUITES = 1000


@pytest.mark.parametrize("cases", simulation.SIZES)
def test_suite_intervals_cover_the_population_figure(cases: int) -> None:
    """The bench's 93-97% band, widened by two Monte Carlo standard errors at 1,000 suites."""
    error = 2 * math.sqrt(0.95 * 0.05 / SUITES)
    low, high = simulation.COVERAGE
    for k in (1, 4):
        result = simulation.coverage(cases, k, SUITES, seed=1, incumbents=False)
        assert low - error <= result.ours <= high + error, result


def test_the_paired_gate_sees_a_10_point_drop_and_rarely_fails_an_a_a() -> None:
    drop, same = simulation.SETTINGS[0], simulation.SETTINGS[2]
    seen = simulation.power(drop, 200, seed=1, incumbents=False)
    assert seen.fails >= 0.8, seen
    aa = simulation.power(same, 200, seed=1, incumbents=False)
    assert aa.fails <= 0.05, aa
    unpaired = simulation.power(drop, 200, seed=1)
    assert unpaired.welch < seen.fails  # the unpaired test over cases sees it less often


def test_a_real_drop_fails_and_a_small_sample_cannot_decide() -> None:
    base = [CaseCounts(f"c{i}", {"pass": 8}) for i in range(60)]
    worse = [CaseCounts(f"c{i}", {"pass": 4, "fail": 4}) for i in range(60)]
    thresholds = Thresholds(max_drop=0.05)
    failing = _drop_check(compare_counts(base, worse), thresholds, ())
    assert not failing.holds and not failing.undecided and "a real drop" in failing.text
    few = [CaseCounts(f"c{i}", {"pass": 1, "fail": 1}) for i in range(6)]
    check = _drop_check(compare_counts(few, few), thresholds, ())
    assert check.undecided and "cannot decide: these runs can detect a drop of" in check.text
    assert "--max-drop 0.05 needs about" in check.text
    forced = Thresholds(max_drop=0.05, allow_underpowered=True)
    decided = _drop_check(compare_counts(few, few), forced, ())
    assert not decided.holds and not decided.undecided


def test_a_cases_metrics_carry_case_interval_for_every_k() -> None:
    """case_metrics maps Wilson's interval in one pass over k: the same as case_interval."""
    from replay import case_metrics

    for n in range(1, 13):
        for c in range(n + 1):
            metrics = case_metrics(CaseCounts("x", {"pass": c, "fail": n - c}))
            for k in range(1, n + 1):
                assert metrics.pass_hat_ci[k] == pytest.approx(case_interval(c, n, k), abs=1e-12)
                assert metrics.pass_at_ci[k] == pytest.approx(
                    case_interval(c, n, k, at_least_one=True), abs=1e-12
                )
