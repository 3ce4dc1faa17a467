"""Every table keeps its header when it has no rows.

A table with no rows used to be written as one newline, which pandas.read_csv refuses (EmptyDataError):
cross_family.csv, seed_variance.csv and seed_fits.csv in the default run. Every registered table is built
here from summaries of real (synthetic) rank arrays twice: from a run shaped like the default (one family
of three sizes, one seed, no checkpoints, no strata), where those tables and the strata and training-token
tables have no rows, and from a run that gives every table rows (seeds, checkpoints, strata, a family of one
size). Each is written by the workflow's writer and read back with pandas; an empty one must carry the
columns the table has when it has rows.
"""

from __future__ import annotations

import dataclasses
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from rankscale.identity import OWN_SHA
from rankscale.laws import FORMS, JointLaw
from rankscale.lognormal import sample_discrete_lognormal
from rankscale.rankfile import RankArrays
from rankscale.statistics import Totals
from rankscale.strata import StrataSettings
from rankscale.summary import ModelInfo, Resampling, Summary, SummarySettings, summarize, unit_totals
from rankscale.tables import TABLES, Replicates, TableSettings, build_table, read_table, training, write_table
from rankscale.tables.seeds import seed_fits_table
from rankscale.tables.strata import strata_fits_table
from rankscale.windows import WindowSpec

# degenerate replicates of tiny synthetic strata (a stratum's RBP_k of 0 in some draw) are not this test's business
pytestmark = pytest.mark.filterwarnings("ignore::RuntimeWarning")

VOCAB, DOCUMENTS, PER_DOCUMENT = 500, 29, 40  # 29 effective documents: few, so laws are tested from them
REPLICATES = 20
LAW_K = [1, 10]
BINS = {"frequency": [10, 100], "context": [3, 15]}

# the tables a run shaped like the default leaves without rows (its first three: the default run's own)
EMPTY_BY_DEFAULT = ("cross_family", "seed_variance", "seed_fits")
EMPTY_HERE = (*EMPTY_BY_DEFAULT, "strata", "strata_fits", "strata_contrasts", "data_fits", "joint_fits")

Model = tuple[str, ModelInfo, int, float]  # name, what the plan says of it, S, mu of its ranks' lognormal


def final(name: str, family: str, S: int, mu: float) -> Model:
    return name, ModelInfo(family, None, name, True, None, name), S, mu


def summaries_of(models: list[Model], kinds: list[str], documents: int = DOCUMENTS) -> tuple[list[Summary], Replicates]:
    """Each model's summary of a rank array drawn from a discrete lognormal (mu: smaller is better), as the
    workflow computes it (the bootstrap of its `documents` equally long documents included), read back through its
    JSON form."""
    strata = StrataSettings(kinds, {k: BINS[k] for k in kinds}, LAW_K)
    settings = SummarySettings(4, LAW_K, [1], [1, 2], LAW_K, REPLICATES, 0, True, 10, strata)
    tokens = documents * PER_DOCUMENT
    doc = np.repeat(np.arange(documents), PER_DOCUMENT).astype(np.uint32)
    pos = np.tile(np.arange(1, PER_DOCUMENT + 1), documents).astype(np.uint32)
    target = np.random.default_rng(5).integers(0, VOCAB, tokens).astype(np.uint32)
    summaries, totals, units = [], [], []
    for i, (name, info, S, mu) in enumerate(models):
        rank = sample_discrete_lognormal(mu, 2.0, VOCAB, tokens, seed=i).astype(np.uint32)
        arrays = RankArrays(rank, (-np.log(rank) - 0.05).astype(np.float32), doc, pos, target)
        meta = {"vocab_size": VOCAB, "model": name, "dataset": "d", "S": S, "ties": "ge", OWN_SHA: name}
        resampling = Resampling.for_dataset(np.arange(documents), documents, REPLICATES, 0, "d")
        window = WindowSpec(PER_DOCUMENT, None, None)
        summary, _, boot = summarize(arrays, meta, settings, resampling, info, window, None)
        summaries.append(Summary.from_json(summary.to_json()))
        totals.append(Totals({key[4:]: value for key, value in boot.items() if key.startswith("rep_")}))
        units.append(unit_totals(boot))
    return summaries, Replicates(summaries, totals, units)


def default_like() -> tuple[list[Summary], Replicates]:
    """One family of three sizes, one seed each, final models only, no strata: the default run's shape."""
    sizes = [("a", 10**6, 3.0), ("b", 10**7, 2.6), ("c", 10**8, 2.2)]
    return summaries_of([final(name, "f", S, mu) for name, S, mu in sizes], [])


def everything(documents: int = DOCUMENTS) -> tuple[list[Summary], Replicates]:
    """Three sizes with two seeds and an earlier checkpoint each, a family of one (larger) model beside
    them, and two stratum kinds: every table has rows."""
    models = []
    for size, S, mu in [("a", 10**6, 3.0), ("b", 10**7, 2.6), ("c", 10**8, 2.2)]:
        for seed in (1, 2):
            run = f"{size}-s{seed}"
            for D, last in ((10**8, False), (10**9, True)):
                info = ModelInfo("f", D, run, last, seed, size)
                models.append((run if last else f"{run}-early", info, S, mu + 0.05 * seed + (0 if last else 0.3)))
    models.append(final("solo", "g", 10**9, 2.0))
    return summaries_of(models, ["frequency", "context"], documents)


def in_order() -> list[str]:
    """The registered tables, each after the tables it needs (as the workflow's jobs run)."""
    done: list[str] = []
    while len(done) < len(TABLES):
        done += [n for n, t in TABLES.items() if n not in done and set(t.needs) <= set(done)]
    return done


def settings(form: str) -> TableSettings:
    return TableSettings(level=0.95, law_k=LAW_K, law_form=form, forms=["power_law", "offset_power_law"],
                         refits=1, seed=0)  # fmt: skip


def build_all(run: tuple[list[Summary], Replicates], form: str, where: Path) -> dict[str, pd.DataFrame]:
    """Every registered table of `run`, written by the workflow's writer into `where` and read back as a
    table that needs it reads it (`read_table`)."""
    summaries, replicates = run
    tables: dict[str, pd.DataFrame] = {}
    for name in in_order():
        frame = build_table(name, summaries, tables, settings(form), replicates)
        write_table(name, frame, where / f"{name}.csv")
        tables[name] = read_table(where / f"{name}.csv")
    return tables


def quick_joint_fit(points, y: np.ndarray) -> JointLaw:  # noqa: ANN001
    """A fixed joint law in place of the fitted one (seconds per law, many starts): a header does not depend on
    the values under it."""
    return JointLaw(E=float(np.min(y)) / 2, A=1.0, alpha=0.1, B=1.0, beta=0.1, n=len(y))


QUICK_JOINT = dataclasses.replace(
    training.JOINT,
    fit=quick_joint_fit,
    fit_replicates=lambda points, y, law, refits: {c: np.full(len(y), v) for c, v in law.row().items()},  # every one
)


@pytest.fixture(scope="module")
def inputs() -> dict[str, tuple[list[Summary], Replicates]]:
    """The two runs' summaries and bootstrap replicates."""
    return {"default": default_like(), "everything": everything()}


@pytest.fixture(scope="module")
def runs(inputs, tmp_path_factory: pytest.TempPathFactory) -> dict[str, tuple[Path, dict[str, pd.DataFrame]]]:
    """Both runs' tables, as written (the folder) and as read back."""
    out = {}
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(training, "JOINT", QUICK_JOINT)
        for name, run in inputs.items():
            where = tmp_path_factory.mktemp(name)
            out[name] = where, build_all(run, "power_law", where)
    return out


def test_the_default_runs_empty_tables_are_read_by_pandas_with_their_header(runs) -> None:
    where, _ = runs["default"]
    _, full = runs["everything"]
    for name in EMPTY_BY_DEFAULT:
        text = (where / f"{name}.csv").read_text()
        assert text.strip() and text.count("\n") == 1, (name, text)  # the header line, and nothing else
        frame = pd.read_csv(where / f"{name}.csv")  # raised EmptyDataError on a file of one newline
        assert frame.empty and list(frame.columns) == list(full[name].columns), name


@pytest.mark.parametrize("name", EMPTY_HERE)
def test_an_empty_table_has_the_columns_it_has_with_rows(runs, name: str) -> None:
    _, empty = runs["default"]
    _, full = runs["everything"]
    assert empty[name].empty and not full[name].empty
    assert list(empty[name].columns) == list(full[name].columns)


def test_every_table_file_has_a_header(runs) -> None:
    for run in ("default", "everything"):
        where, _ = runs[run]
        for name in TABLES:
            frame = pd.read_csv(where / f"{name}.csv")
            assert len(frame.columns) > 0, (run, name)


def test_empty_tables_of_a_bounded_form_keep_the_form_s_columns(inputs, runs) -> None:
    """E + C S^-alpha: the laws per seed and per stratum name E and `not_identified` in their header too."""
    form = FORMS["offset_power_law"]
    summaries, replicates = inputs["default"]
    strata = strata_fits_table(summaries, form, replicates, 0.95, 3, 0)
    header = list(strata.columns)
    assert strata.empty and {"E", "E_ci_low", "E_ci_high", "alpha", "not_identified"} <= set(header)
    assert header[:4] == ["family", "dataset", "kind", "stratum"] and header[-1] == "note"
    _, tables = runs["default"]
    no_fits = tables["powerlaw_fits"].iloc[:0]  # (those are of the power law; no seed needs one anyway)
    seeds = seed_fits_table(tables["metrics"], no_fits, replicates, LAW_K, 0.95, form, 3)
    assert seeds.empty and {"E", "E_ci_low", "E_ci_high", "not_identified", "note"} <= set(seeds.columns)


NO_EXPONENT = dataclasses.replace(FORMS["power_law"], name="no_exponent", exponent=None)


@pytest.mark.parametrize("name", ["emergence_laws", "strata_contrasts"])
def test_a_form_without_an_exponent_leaves_its_contrasts_a_header(
    inputs, runs, name: str, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    """A law form with no exponent has nothing to contrast: those tables have no rows (the family of three
    sizes, with strata), and keep their header."""
    with FORMS.added(NO_EXPONENT):  # a registry refuses item assignment
        summaries, replicates = inputs["everything"]
        _, full = runs["everything"]
        ladder = [s for s in summaries if s.family == "f"]  # no family of one size: not even a note row
        frame = build_table(name, ladder, full, settings(NO_EXPONENT.name), replicates)
        write_table(name, frame, tmp_path / f"{name}.csv")
        back = read_table(tmp_path / f"{name}.csv")
        assert back.empty and list(back.columns) == list(full[name].columns)


def test_exponent_contrasts_of_a_form_without_an_exponent_keep_their_header(
    inputs, runs, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    with FORMS.added(NO_EXPONENT):  # a registry refuses item assignment
        summaries, replicates = inputs["default"]
        _, tables = runs["default"]
        frame = build_table("exponent_contrasts", summaries, tables, settings(NO_EXPONENT.name), replicates)
        write_table("exponent_contrasts", frame, tmp_path / "exponent_contrasts.csv")
        header = list(pd.read_csv(tmp_path / "exponent_contrasts.csv").columns)
        assert header == list(runs["everything"][1]["exponent_contrasts"].columns)


def test_the_writer_refuses_a_table_without_column_names(tmp_path: Path) -> None:
    path = tmp_path / "t.csv"
    with pytest.raises(ValueError, match="'t' has no column names"):
        write_table("t", pd.DataFrame(), path)
    assert not path.exists() and not list(tmp_path.iterdir())  # nothing half-written either
    write_table("t", pd.DataFrame(columns=["family", "k", "note"]), path)
    assert path.read_text() == "family,k,note\n"
    back = read_table(path)
    assert back.empty and list(back.columns) == ["family", "k", "note"] and str(back["k"].dtype) == "Int64"


def test_an_old_headerless_file_still_reads_back_empty(tmp_path: Path) -> None:
    """Files written before tables kept their header (one newline) are still read, as an empty table."""
    path = tmp_path / "old.csv"
    path.write_text("\n")
    with pytest.raises(pd.errors.EmptyDataError):
        pd.read_csv(path)
    assert read_table(path).empty


@pytest.mark.parametrize("run", ["default", "everything"])
def test_no_point_sits_on_or_outside_its_own_interval(runs, run: str) -> None:
    """metrics.csv and conjecture.csv as written: every finite interval holds its point strictly (or is the point,
    where nothing moves with the documents); an empty one says why (the histogram statistics' intervals
    used to be stretched to reach their point)."""
    _, tables = runs[run]
    metrics = tables["metrics"]
    finite = metrics["ci_low"].notna()
    inside = (metrics["ci_low"] < metrics["value"]) & (metrics["value"] < metrics["ci_high"])
    point = (metrics["ci_low"] == metrics["value"]) & (metrics["ci_high"] == metrics["value"])
    assert finite.any() and (inside | point)[finite].all()
    assert (metrics.loc[~finite, "ci_note"].str.len() > 0).all()
    conjecture = tables["conjecture"]
    for name in ("ce", "ee", "self_alignment", "confidence", "ee_lognormal", "mu", "sigma"):
        low, high, value = conjecture[f"{name}_ci_low"], conjecture[f"{name}_ci_high"], conjecture[name]
        has = low.notna()
        assert ((low < value) & (value < high) | (low == value) & (high == value))[has].all(), name
        assert conjecture.loc[~has & value.notna(), "ci_note"].str.contains(name).all(), name
