"""One floor for every lack-of-fit test: under 20 effective documents (Kish) no law reports a p, whichever test it
takes (the sign flip over the documents' own errors, or Hotelling's T^2 where a law has no per-document sums: the
histogram statistics, seeded sizes, the laws in D and in (S, D), the lognormal's trends). Hotelling's T^2 at
pydoc's 6.6 effective documents rejected 17.8-19.7% of exact laws in D on real-document nulls.

Every path that fits a law is checked at the floor's edge (NaN just under it, the test's own p at it), the tables
built from synthetic runs of 12 and 29 equal documents, and every `lof_p` of a finished (smoke) run is swept
against its dataset's effective number of documents in metrics.csv."""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from rankscale.laws.components import fit_components
from rankscale.laws.few_documents import MIN_DOCUMENTS, UNTESTED_LAWS, Documents, can_test, few_documents_test
from rankscale.laws.random_effects import fit_size_level, hotelling_p, lack_of_fit, residual_basis, size_matrix
from rankscale.tables import build_table, training
from rankscale.tables.noise import line_with_sizes

pytestmark = pytest.mark.filterwarnings("ignore::RuntimeWarning")

SIZES = np.array([1e5, 3e5, 1e6, 3e6, 1e7, 3e7])
X = np.stack([np.ones(6), np.log(SIZES)], axis=1)
SLOPE = np.array([0.0, 1.0])
# the tables that carry a law's lack of fit (`rankscale.tables.noise.SIZE_LEVEL_COLUMNS`)
LOF_TABLES = ("powerlaw_fits", "exponent_contrasts", "lognormal_trends", "data_fits", "joint_fits", "seed_fits",
              "strata_fits")  # fmt: skip


def untested_below_the_floor(tables: Path) -> tuple[list[str], int]:
    """Every row of every table in `tables` with a `lof_p` column whose p is finite though its dataset's documents
    are worth fewer than `MIN_DOCUMENTS` (the fewest `n_eff_documents` of metrics.csv's rows of its family and
    dataset, or of its dataset where the table has no family), or below its own `lof_n_eff`; and how many tables
    had the column. A family's models score the same documents, so their effective numbers agree."""
    metrics = pd.read_csv(tables / "metrics.csv")
    by_family = metrics.groupby(["family", "dataset"])["n_eff_documents"].min()
    by_dataset = metrics.groupby("dataset")["n_eff_documents"].min()
    found, swept = [], 0
    for path in sorted(tables.glob("*.csv")):
        frame = pd.read_csv(path)
        if "lof_p" not in frame:
            continue
        swept += 1
        for i, row in frame[frame["lof_p"].notna()].iterrows():
            family = row.get("family")
            n_eff = (by_family.get((family, row["dataset"]), math.nan) if "family" in frame
                     else by_dataset.get(row["dataset"], math.nan))  # fmt: skip
            own = row.get("lof_n_eff", math.inf)
            if not (n_eff >= MIN_DOCUMENTS and (pd.isna(own) or own >= MIN_DOCUMENTS)):
                found.append(f"{path.name} row {i} ({family}, {row['dataset']}): lof_p {row['lof_p']} at n_eff {n_eff}")
    return found, swept


def test_the_sweep_finds_a_p_under_the_floor(tmp_path: Path) -> None:
    """A table that reports a p for a dataset of 6.6 effective documents is named; one that leaves it empty (or
    tests a dataset of 40) is not; a table without `lof_p` is not swept."""
    pd.DataFrame({"family": ["f", "f"], "dataset": ["pydoc", "humaneval"], "n_eff_documents": [6.6, 40.0]}).to_csv(
        tmp_path / "metrics.csv", index=False
    )
    pd.DataFrame({"family": ["f", "f", "f"], "dataset": ["pydoc", "pydoc", "humaneval"], "lof_q": [21.0, 3.0, 2.0],
                  "lof_p": [0.0045, math.nan, 0.3]}).to_csv(tmp_path / "data_fits.csv", index=False)  # fmt: skip
    pd.DataFrame({"dataset": ["pydoc"], "quantity": ["mu"], "lof_p": [0.5]}).to_csv(tmp_path / "t.csv", index=False)
    found, swept = untested_below_the_floor(tmp_path)
    assert swept == 2 and len(found) == 2
    assert found[0].startswith("data_fits.csv row 0 (f, pydoc): lof_p 0.0045 at n_eff 6.6")
    assert found[1].startswith("t.csv row 0 (None, pydoc)")


def test_one_function_decides_testability() -> None:
    assert can_test(MIN_DOCUMENTS) and can_test(math.inf) and can_test(132.0)
    assert not can_test(19.99) and not can_test(6.6) and not can_test(math.nan)
    assert can_test(5.0, min_documents=0.0)  # the benchmarks' way to see the test under the floor


def test_hotellings_path_is_not_testable_under_the_floor() -> None:
    """Without the documents' sums Q is Hotelling's T^2 on nu = n_eff - 1: at n_eff 20 its p is T^2's, at 19.99
    (and pydoc's 6.6, where it rejected 17.8-19.7% of exact laws) it is NaN, Q still reported."""
    rng = np.random.default_rng(3)
    A = rng.standard_normal((6, 6))
    V = A @ A.T / 600 + 1e-4 * np.eye(6)
    y = X @ np.array([1.0, -0.05]) + 0.03 * rng.standard_normal(6)
    at = lack_of_fit(X, y, V, documents_df=MIN_DOCUMENTS - 1.0)
    assert at.n_eff == MIN_DOCUMENTS and at.p == pytest.approx(hotelling_p(at.q, 4, MIN_DOCUMENTS - 1.0), rel=1e-12)
    assert 0.0 < at.p < 1.0
    for df in (MIN_DOCUMENTS - 1.01, 5.6):
        under = lack_of_fit(X, y, V, documents_df=df)
        assert math.isnan(under.p) and under.q == at.q and under.df == 4 and under.n_eff == df + 1.0
        assert not math.isnan(hotelling_p(under.q, 4, df))  # what the tables used to report


def documents_of(units: int, rng: np.random.Generator) -> Documents:
    """`units` equally long documents (Kish: exactly `units`) with random influence on the six points."""
    tokens = np.full(units, 50.0)
    errors = rng.standard_normal((units, 6)) * 0.01 / units
    return Documents(errors - (tokens / tokens.sum())[:, None] * errors.sum(axis=0)[None, :], tokens)


def test_the_sign_flip_path_is_not_testable_under_the_floor() -> None:
    """With the documents' sums: 20 equal documents are worth 20 and get the sign flip's p, 19 get NaN."""
    rng = np.random.default_rng(4)
    y = X @ np.array([1.0, -0.05]) + 0.001 * rng.standard_normal(6)
    V = 1e-6 * np.eye(6)
    at, under = documents_of(20, rng), documents_of(19, rng)
    found = lack_of_fit(X, y, V, documents=at)
    assert found.n_eff == 20.0 and found.p == few_documents_test(residual_basis(X), y, at)[1] and 0.0 < found.p <= 1
    below = lack_of_fit(X, y, V, documents=under)
    assert below.n_eff == 19.0 and math.isnan(below.p) and below.q == pytest.approx(found.q, rel=1e-12)
    # the units spread evenly (a stratum of every document's first tokens) over a dataset worth 6.6: its floor
    pydoc = lack_of_fit(X, y, V, documents_df=5.6, documents=at)
    assert pydoc.n_eff == pytest.approx(6.6) and math.isnan(pydoc.p) and pydoc.q == found.q


def test_every_law_fitting_path_keeps_the_floor() -> None:
    """The size level of a law in S (`fit_size_level`, both tests), of the joint law's two components
    (`fit_components`, Hotelling) and of the lognormal's trends (`line_with_sizes`, Hotelling): NaN under the
    floor with its n_eff, a finite p at it."""
    rng = np.random.default_rng(5)
    y = X @ np.array([1.0, -0.05]) + 0.01 * rng.standard_normal(6)
    V = 1e-4 * (0.2 * np.eye(6) + 0.8)
    K = size_matrix(range(6))
    for at, under in (({"documents_df": 19.0}, {"documents_df": 5.6}),
                      ({"documents": documents_of(20, rng)}, {"documents": documents_of(19, rng)})):  # fmt: skip
        level, low = fit_size_level(X, y, V, K, SLOPE, **at), fit_size_level(X, y, V, K, SLOPE, **under)
        assert 0.0 < level.q_p <= 1.0 and level.q_n_eff == 20.0
        assert math.isnan(low.q_p) and low.q_n_eff < 20.0 and np.isfinite(low.q)
    Ks = (size_matrix(["a", "a", "b", "b", "c", "c"]), np.eye(6))
    assert 0.0 < fit_components(X, y, V, Ks, SLOPE, 19.0).q_p < 1.0
    low = fit_components(X, y, V, Ks, SLOPE, 5.6)
    assert math.isnan(low.q_p) and low.q_n_eff == pytest.approx(6.6) and np.isfinite(low.q)
    samples = y[None, :] + 0.01 * rng.standard_normal((200, 6))
    x = np.log(SIZES)
    level = line_with_sizes(x, y, samples, list("abcdef"), 0, ("f", "d", "mu"), 19.0)[0]
    assert level is not None and 0.0 < level.q_p < 1.0
    low = line_with_sizes(x, y, samples, list("abcdef"), 0, ("f", "d", "mu"), 5.6)[0]
    assert low is not None and math.isnan(low.q_p) and low.q_n_eff == pytest.approx(6.6)


def lof_tables(documents: int, tmp: Path) -> dict[str, pd.DataFrame]:
    """The tables with a lack of fit, and metrics.csv, written where `untested_below_the_floor` reads them, of a
    synthetic run on `documents` equal documents: three sizes of two seeds, each run with three checkpoints (a law
    in D needs three to leave a residual), and strata of context length."""
    from rankscale.summary import ModelInfo
    from tests.test_table_headers import QUICK_JOINT, settings, summaries_of

    models = []
    for size, S, mu in [("a", 10**6, 3.0), ("b", 10**7, 2.6), ("c", 10**8, 2.2)]:
        for seed in (1, 2):
            run = f"{size}-s{seed}"
            for step, D in enumerate((10**7, 10**8, 10**9)):
                info = ModelInfo("f", D, run, step == 2, seed, size)
                models.append((run if step == 2 else f"{run}-{step}", info, S, mu + 0.05 * seed + 0.3 * (2 - step)))
    summaries, replicates = summaries_of(models, ["context"], documents)
    tables: dict[str, pd.DataFrame] = {}
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(training, "JOINT", QUICK_JOINT)
        for name in ("metrics", *LOF_TABLES):
            tables[name] = build_table(name, summaries, tables, settings("power_law"), replicates)
            tables[name].to_csv(tmp / f"{name}.csv", index=False)
    return tables


@pytest.mark.parametrize("documents", [12, 29])
def test_every_table_of_laws_keeps_the_floor(documents: int, tmp_path: Path) -> None:
    """A run of 12 equal documents: every law of every table with `lof_p` (CE and -log RBP_k from their sums, the
    histogram statistics' and the seeded laws' by Hotelling, the laws in D and in (S, D), the lognormal's trends)
    reports Q with an empty p and lof_n_eff 12. The same run on 29: each of those tables tests some law."""
    tables = lof_tables(documents, tmp_path)
    found, swept = untested_below_the_floor(tmp_path)
    assert swept == len(LOF_TABLES) and found == []
    for name in LOF_TABLES:
        rows = tables[name][tables[name]["lof_q"].notna()]
        assert len(rows), name
        if documents < MIN_DOCUMENTS:
            assert rows["lof_p"].isna().all(), name
            np.testing.assert_allclose(rows["lof_n_eff"], float(documents), rtol=1e-12, err_msg=name)
        else:
            assert rows["lof_p"].notna().any() and (rows.loc[rows["lof_p"].notna(), "lof_n_eff"] >= 20).all(), name
    fits = tables["powerlaw_fits"]
    ee = fits[(fits["metric"] == "ee") & fits["lof_q"].notna()]
    assert len(ee) and (ee["lof_p"].isna() if documents < MIN_DOCUMENTS else ee["lof_p"].notna()).all()


def test_no_finished_run_reports_a_lack_of_fit_under_the_floor(smoke_run: Path) -> None:
    """Every table of the smoke run with a `lof_p`: no finite p where its dataset's documents are worth under 20;
    and the run has such a dataset, whose laws report Q without a p."""
    tables = smoke_run / "results/smoke/tables"
    found, swept = untested_below_the_floor(tables)
    assert found == [] and swept >= 3
    metrics = pd.read_csv(tables / "metrics.csv")
    few = set(metrics.loc[metrics["n_eff_documents"] < MIN_DOCUMENTS, "dataset"])
    fits = pd.read_csv(tables / "powerlaw_fits.csv")
    untested = fits[fits["dataset"].isin(few) & fits["lof_q"].notna()]
    assert len(untested) and untested["lof_p"].isna().all() and (untested["lof_n_eff"] < MIN_DOCUMENTS).all()
    # a law whose test rejected exact laws well above 5% on the run's own documents is never tested, whatever n_eff;
    # the others of the same testable dataset are
    tested = fits[~fits["dataset"].isin(few) & fits["lof_q"].notna()]
    never = tested["metric"].isin(UNTESTED_LAWS)
    assert never.any() and tested.loc[never, "lof_p"].isna().all() and tested.loc[~never, "lof_p"].notna().any()
    contrasts = pd.read_csv(tables / "exponent_contrasts.csv")
    with_it = contrasts["metric"].isin(UNTESTED_LAWS) | contrasts["versus"].isin(UNTESTED_LAWS)
    assert with_it.any() and contrasts.loc[with_it, "lof_p"].isna().all()
