"""Which calibration intervals metrics.csv marks `ci_reliable`: the bootstrap interval (bc) of a statistic of
document sums only where its coverage was measured to hold (`MEASURED_SUMS`, benchmarks/calibration_coverage.py),
and then only by the documents' design, as a ratio's cluster-robust t."""

from __future__ import annotations

import math

import numpy as np
import pytest

from rankscale.bca import JACKKNIFE_T
from rankscale.intervals import CLIPPED, ModelInterval, clipped_bound
from rankscale.metrics import CALIBRATION_METRICS
from rankscale.tables.model_intervals import BC, CR2_T, MEASURED_SUMS, SUMS_SHORT, interval_method, reliability

FOUND = ModelInterval(0.01, 0.02, 0.03)


def test_only_a_measured_bootstrap_interval_of_document_sums_is_reliable_and_by_design_alone() -> None:
    assert MEASURED_SUMS == ("pit_distance",)
    assert reliability(FOUND, 40.0, 52, BC, False, "pit_distance") == (True, "")
    for name in ("calibration_error", "nucleus_star"):  # measured, and short of 94-97.5% in some design
        assert reliability(FOUND, 40.0, 52, BC, False, name) == (False, SUMS_SHORT)
    ok, note = reliability(FOUND, 7.6, 27, BC, False, "pit_distance")  # pydoc's few, uneven documents
    assert not ok and "effective documents" in note
    ok, note = reliability(FOUND, 40.0, 100, BC, False, "pit_distance")  # design effect 2.5
    assert not ok and "uneven documents" in note
    # no interval, a fallback method, or a statistic of the rank histogram of that name: never reliable this way
    assert not reliability(ModelInterval(math.nan, math.nan, note="none"), 40.0, 52, BC, False, "pit_distance")[0]
    assert not reliability(ModelInterval(0.01, 0.02, method=JACKKNIFE_T), 40.0, 52, BC, False, "pit_distance")[0]
    assert not reliability(FOUND, 40.0, 52, BC, True, "pit_distance")[0]
    assert reliability(FOUND, 40.0, 52, CR2_T, False, "brier") == (True, "")


def test_the_measured_metrics_are_the_calibration_metrics_with_bootstrap_intervals() -> None:
    """MEASURED_SUMS names metrics whose metrics.csv interval is a bc one where the documents' sums are loaded."""
    units = {"tokens": None}  # interval_method reads only which names the unit totals hold
    bootstrap = {m.name for m in CALIBRATION_METRICS if interval_method(m, units) == BC}  # type: ignore[arg-type]
    assert bootstrap == {"calibration_error", "pit_distance", "nucleus_star"}
    assert set(MEASURED_SUMS) <= bootstrap


def test_a_ratio_measured_short_of_its_level_is_never_reliable() -> None:
    """C(0.99) and C(0.95): their cluster-robust t fell short of 94% at 22-136 effective documents."""
    from rankscale.tables.model_intervals import UNDERCOVERED_RATIOS

    assert set(UNDERCOVERED_RATIOS) == {"nucleus_99", "nucleus_95"}
    for name, why in UNDERCOVERED_RATIOS.items():
        assert reliability(FOUND, 136.0, 168, CR2_T, False, name) == (False, why)
    assert reliability(FOUND, 136.0, 168, CR2_T, False, "nucleus_90") == (True, "")


def test_a_distance_estimated_at_zero_gets_the_squares_percentile_end() -> None:
    """A debiased RMS clipped at 0 has no BC interval (its lower end cannot lie below the estimate); its interval is
    [0, the replicates' 97.5% quantile], the percentile interval of the square with the clip applied to both ends."""
    rng = np.random.default_rng(0)
    squares = rng.normal(-1e-4, 2e-4, 4000)  # the debiased square's replicates about a sample's estimate below 0
    reps = np.sqrt(np.clip(squares, 0.0, None))
    got = clipped_bound(reps, 0.0, (0.0, 1.0), 0.95)
    assert got is not None and got.low == 0.0 and got.method == CLIPPED and "one-sided upper" in got.note
    assert got.high == pytest.approx(math.sqrt(np.quantile(squares, 0.975)), rel=1e-6)  # interpolation apart
    assert 0 < got.mc_error < 0.1
    mirrored = clipped_bound(1.0 - reps, 1.0, (0.0, 1.0), 0.95)  # at the upper bound: the mirror
    assert mirrored is not None and mirrored.high == 1.0 and mirrored.low == pytest.approx(1.0 - got.high)
    assert clipped_bound(reps, 0.01, (0.0, 1.0), 0.95) is None  # inside its bounds: BC as before
    assert clipped_bound(np.zeros(100), 0.0, (0.0, 1.0), 0.95) is None  # no spread: the point is its interval


def test_a_one_sided_bound_is_never_marked_reliable() -> None:
    """Its coverage is measured (benchmarks/calibration_coverage.py's `one-sided at 0`) but not under the rule that
    makes pit_distance's two-sided interval reliable; it says what it is."""
    bound = ModelInterval(0.0, 0.02, 0.05, "estimated at its bound 0", CLIPPED)
    ok, note = reliability(bound, 40.0, 52, BC, False, "pit_distance")
    assert not ok and "estimated at its bound 0" in note
