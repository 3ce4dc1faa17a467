"""The calibration laws' real-document nulls (benchmarks/calibration_law_nulls.py, RESULTS.md "Calibration laws:
coverage on real-document nulls"): the imposed population lies exactly on each law through the metrics' own code,
the packed sums a sample's units and replicates are read from are each law's own (its scaled copy, not another
law's), and a unit's squares are squares of its summed documents, not sums of their squares."""

from __future__ import annotations

import numpy as np
import pytest

from rankscale import calibration as cal
from rankscale.metrics import METRICS
from rankscale.statistics import LOGPROB_SUM, TOKENS, Totals
from tests.conftest import benchmark_module

U, M = 14, 4  # documents, sizes


@pytest.fixture(scope="module")
def nulls():
    return benchmark_module("calibration_law_nulls")


@pytest.fixture(scope="module")
def population(nulls):
    """A synthetic population whose calibration metrics are far from any power law in S: every ratio and distance
    positive, overconfident models (c > accuracy) with CE above the mean entropy."""
    rng = np.random.default_rng(3)
    n = rng.integers(20, 300, U).astype(np.float64)
    S = np.array([1e6, 4e6, 2e7, 9e7])
    shape = (U, M)
    top1 = np.floor(n[:, None] * rng.uniform(0.3, 0.5, shape))
    bins = rng.dirichlet(np.ones(cal.RELIABILITY_BINS), shape) * n[:, None, None]
    curve = np.sort(rng.uniform(0.0, 1.0, (U, M, len(cal.P_GRID))), axis=-1)
    sums = {
        LOGPROB_SUM.name: -n[:, None] * rng.uniform(2.0, 3.0, shape),
        cal.ENTROPY_SUM.name: n[:, None] * rng.uniform(1.0, 1.5, shape),
        cal.NUCLEUS_HITS.name: np.floor(curve * n[:, None, None]),
        cal.BIN_TOKENS.name: bins,
        cal.BIN_DEVIATION.name: bins * rng.normal(-0.05, 0.05, bins.shape),
        cal.CONFIDENCE_SUM.name: top1 + n[:, None] * rng.uniform(0.02, 0.1, shape),
        cal.TOP1_HITS.name: top1,
        cal.BRIER_SUM.name: n[:, None] * rng.uniform(0.1, 0.2, shape),
        cal.PIT_DEVIATION.name: n[:, None, None] * rng.normal(0.03, 0.05, (U, M, len(cal.U_GRID))),
    }
    hits = np.floor(n[:, None] * rng.uniform(0.3, 0.5, shape))
    pool = benchmark_module("real_document_nulls").Pool(n, -sums[LOGPROB_SUM.name], hits, S, 0.0, 0.0)
    return nulls.Population.of(pool, sums)


def law_values(nulls, metric: str, totals: Totals) -> np.ndarray:
    return METRICS[metric].to_law(METRICS[metric].compute(totals))


def test_the_imposed_population_lies_on_each_law(nulls, population) -> None:
    """Through METRICS: log of each law's quantity is linear in log S to 1e-9 with the exponent reported, which is
    that of the law fitted to the population before it was imposed (a wrong factor, e.g. f^2 on a distance's
    deviations or the wrong nucleus column, leaves it off the line)."""
    S = population.pool.S
    X = np.stack([np.ones(M), np.log(S)], axis=1)
    for how in nulls.IMPOSITIONS:
        sums, alpha = population.laws[how.metric]
        before = law_values(nulls, how.metric, nulls.plug_in(population.sums))
        assert alpha == pytest.approx(nulls.law_exponent(S, before)[0], abs=1e-12)
        y = law_values(nulls, how.metric, nulls.plug_in(sums))
        beta, *_ = np.linalg.lstsq(X, np.log(y), rcond=None)
        residual = np.log(y) - X @ beta
        if how.scaled:
            assert np.abs(residual).max() < 1e-9, how.metric
            assert -beta[1] == pytest.approx(alpha, abs=1e-9)
            assert not np.allclose(y, before), how.metric  # the population was off the law: it moved
        else:  # nucleus_star: pseudo-true, the population as it is, off its law
            assert np.abs(residual).max() > 1e-4


def test_a_distance_scales_with_its_deviations_only_through_the_debiased_square(nulls, population) -> None:
    """The plug-in (documents' squares at 0) scales by f with the deviations; the sample's debiased estimate,
    whose squares are the units' own, is a different number: the truth is not the population's debiased value."""
    sums = population.sums
    scaled = {**sums, cal.PIT_DEVIATION.name: 2.0 * sums[cal.PIT_DEVIATION.name]}
    one, two = (METRICS["pit_distance"].compute(nulls.plug_in(s)) for s in (sums, scaled))
    np.testing.assert_allclose(two, 2.0 * one, rtol=1e-12)  # float64 sums of the same numbers
    packed = population.packed
    linear = packed.linear
    debiased = METRICS["pit_distance"].compute(packed.totals("pit_distance", linear.sum(axis=0),
                                                             (linear[:, packed.square_of] ** 2).sum(axis=0)))  # fmt: skip
    truth = METRICS["pit_distance"].compute(nulls.plug_in(population.laws["pit_distance"][0]))
    assert np.all(np.abs(debiased - truth) > 1e-6)


def test_packed_sums_are_each_laws_own(nulls, population) -> None:
    """Each law's totals read back from the packed documents equal its own imposed sums' (not the base population's
    or another law's), and a unit holding two documents has their summed sums and, as its square, the square of
    that sum."""
    packed = population.packed
    for name, (sums, _) in population.laws.items():
        read = packed.totals(name, packed.linear.sum(axis=0), np.zeros(packed.square_of.size))
        np.testing.assert_allclose(law_values(nulls, name, read), law_values(nulls, name, nulls.plug_in(sums)),
                                   rtol=1e-12)  # fmt: skip
    rows = np.zeros((2, U))
    rows[0, [0, 1]] = 1.0
    rows[1, 2] = 1.0
    linear = rows @ packed.linear
    units = packed.totals("calibration_error", linear, linear[:, packed.square_of] ** 2)
    own = population.laws["calibration_error"][0][cal.BIN_DEVIATION.name]
    np.testing.assert_allclose(units[cal.BIN_DEVIATION.name][0], own[0] + own[1], rtol=1e-12)
    np.testing.assert_allclose(units[cal.BIN_DEVIATION_SQUARED.name][0], (own[0] + own[1]) ** 2, rtol=1e-12)
    np.testing.assert_allclose(units[cal.BIN_TOKENS_SQUARED.name][1], population.sums[cal.BIN_TOKENS.name][2] ** 2,
                               rtol=1e-12)  # fmt: skip
    np.testing.assert_allclose(units[TOKENS.name][0], population.sums[TOKENS.name][[0, 1]].sum(axis=0), rtol=1e-12)
