"""Training-seed noise in the laws' intervals, against synthetic rank arrays with known seed and document effects.

A family of six sizes, each trained with three seeds, scored on the same documents: the true law is
-log RBP_1 = C S^-alpha for the population of training runs; each run departs from it by a seed effect
(lognormal), and documents differ in difficulty (shared by every run: the paired structure). The
hierarchical bootstrap resamples seeds within each size on top of the documents; checked here against the exact
variance of a mean of each size's runs (every draw of the seeds enumerated). How often its intervals, and the size
level of runs not known as seeds, cover the true exponent is a Monte Carlo study: benchmarks/seed_coverage.py
(RESULTS.md).
"""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from rankscale.bootstrap import replicate_totals
from rankscale.laws import FORMS
from rankscale.rankfile import RankArrays
from rankscale.statistics import Totals
from rankscale.summary import per_document
from rankscale.tables import Replicates
from rankscale.tables.laws import fits_table
from rankscale.tables.seeds import seed_variance_table
from tests.synthetic import summary

SIZES = np.geomspace(1e5, 3e7, 6)
SEEDS = 3
ALPHA, C = 0.1, 2.5
DOCUMENTS, TOKENS, REPLICATES = 80, 60, 400


def rank_arrays(rng: np.random.Generator, hit_rate: np.ndarray, vocab: int = 1000) -> RankArrays:
    """Ranks per token: 1 (a hit) with its document's probability, else uniform on 2..|V|."""
    doc = np.repeat(np.arange(DOCUMENTS), TOKENS).astype(np.uint32)
    hit = rng.random(doc.size) < hit_rate[doc]
    rank = np.where(hit, 1, rng.integers(2, vocab + 1, doc.size)).astype(np.uint32)
    pos = np.tile(np.arange(1, TOKENS + 1), DOCUMENTS).astype(np.uint32)
    return RankArrays(rank, np.zeros(doc.size, np.float32), doc, pos, np.zeros(doc.size, np.uint32))


def simulate(sim: int, seed_effect: float, pooled_seeds: bool) -> tuple[pd.DataFrame, Replicates]:
    """The metrics rows (RBP_1 of every run) and their paired document-bootstrap replicates."""
    rng = np.random.default_rng(sim)
    difficulty = rng.uniform(-0.5, 0.5, DOCUMENTS)  # the same documents for every run
    rows, summaries, totals = [], [], []
    for s, size in enumerate(SIZES):
        for seed in range(SEEDS):
            y = C * size**-ALPHA * np.exp(rng.normal(0, seed_effect))  # this run's -log RBP_1
            arrays = rank_arrays(rng, np.clip(np.exp(-y) * (1 + difficulty), 0, 1))
            _, stats = per_document(arrays, [1], [], [])
            name = f"m{s}-s{seed}"
            group = f"m{s}" if pooled_seeds else name
            sums = {k: v.sum(axis=0) for k, v in stats.items()}
            summaries.append(summary(name, int(size), sums, [1]))
            reps = replicate_totals({"n": stats["n"], "hits": stats["hits"]}, np.arange(DOCUMENTS), DOCUMENTS,
                                    REPLICATES, sim, "f", "d")  # fmt: skip
            totals.append(Totals(reps))
            rows.append({"family": "f", "model": name, "dataset": "d", "S": int(size), "D": pd.NA, "size": name,
                         "final": True, "seed": seed, "replica_of": group, "metric": "rbp", "k": 1,
                         "value": float(sums["hits"][0] / sums["n"])})  # fmt: skip
    metrics = pd.DataFrame(rows).astype({"k": "Int64", "D": "Int64"})
    return metrics, Replicates(summaries, totals)


def test_the_seed_level_gives_each_sizes_mean_the_variance_of_a_mean_of_its_runs() -> None:
    """`with_seed_noise` over every possible draw of the runs (3^3 for a size of three runs, 2^2 for one of two,
    a size of one run kept): the size's mean log value keeps its mean and has variance s^2 / m exactly, the
    textbook variance of a mean of m runs (s^2 their sample variance). Without the sqrt(m / (m - 1)) factor it
    is (m - 1) / m of that (a 95% interval covering about 89% with three seeds); runs drawn across sizes, or not
    centred on the size's mean, give another number."""
    import itertools

    from rankscale.bootstrap import with_seed_noise

    groups = ["a", "a", "a", "b", "c", "c"]
    logs = np.array([0.10, 0.16, 0.07, 0.5, 0.9, 0.95])
    draws = np.array([[i, j, k, 3, 4 + p, 4 + q]
                      for i, j, k in itertools.product(range(3), repeat=3)
                      for p, q in itertools.product(range(2), repeat=2)])  # fmt: skip
    out = np.log(with_seed_noise(np.tile(np.exp(logs), (len(draws), 1)), groups, draws))
    for cols in ([0, 1, 2], [4, 5]):
        means = out[:, cols].mean(axis=1)
        assert means.mean() == pytest.approx(logs[cols].mean(), rel=1e-12)
        assert means.var() == pytest.approx(logs[cols].var(ddof=1) / len(cols), rel=1e-9)
    np.testing.assert_array_equal(out[:, 3], logs[3])


def test_runs_pooled_as_seeds_get_the_seed_level_and_the_sizes_scatter_on_top() -> None:
    """One simulated family (seed effect 0.08): runs known as seeds of their size are fitted with the documents,
    the seeds and the sizes' scatter; the same runs taken as sizes of their own, with documents and sizes."""
    for pooled, noise in ((True, "documents+seeds+sizes"), (False, "documents+sizes")):
        metrics, replicates = simulate(0, 0.08, pooled_seeds=pooled)
        fit = fits_table(metrics, FORMS["power_law"], replicates, 0.95, 0, 0).iloc[0]
        assert fit["noise"] == noise and fit["alpha_ci_low"] < fit["alpha"] < fit["alpha_ci_high"]


def test_seed_variance_finds_the_seed_share() -> None:
    """With a seed effect far above the document noise, most of the across-run variance is the seeds'."""
    metrics, replicates = simulate(0, 0.3, pooled_seeds=True)
    table = seed_variance_table(metrics, replicates, [1], 0.95, 0)
    assert len(table) == len(SIZES) and (table["n_seeds"] == SEEDS).all()
    assert (table["share_seeds"] > 0.5).mean() >= 0.8, table[["size", "share_seeds"]]
    assert (
        (table["share_seeds_ci_low"] <= table["share_seeds"]) & (table["share_seeds"] <= table["share_seeds_ci_high"])
    ).all()
    calm, calm_reps = simulate(0, 0.0, pooled_seeds=True)  # no seed effect: the spread is the documents'
    quiet = seed_variance_table(calm, calm_reps, [1], 0.95, 0)
    assert quiet["share_seeds"].median() < table["share_seeds"].median()


@pytest.mark.slow
def test_adding_a_seed_trains_and_scores_that_seed_alone(smoke_run, tmp_path) -> None:
    """After a finished smoke run, `seeds: [0, 1]` trains and scores each size's seed-1 run and nothing else;
    the laws' intervals then include the seeds, and the seed tables and figure are filled."""
    import copy
    from collections import Counter

    import yaml

    from rankscale.tables import TABLES, read_table
    from tests.conftest import (
        REPO,
        copy_run,
        file_states,
        job_key,
        output_jobs,
        planned_jobs,
        snakemake,
        trajectory_jobs,
    )

    work = copy_run(smoke_run, tmp_path / "run")
    config = yaml.safe_load((REPO / "config/smoke.yaml").read_text())
    sizes, datasets = [s["name"] for s in config["ladder"]["sizes"]], list(config["datasets"])
    seeded = copy.deepcopy(config)
    seeded["ladder"]["train"]["seeds"] = [0, 1]
    (work / "config/seeded.yaml").write_text(yaml.safe_dump(seeded, sort_keys=False))
    # every table, and the one figure the seeds add: the other figures are drawn from these tables as without seeds
    targets = [f"results/seeded/tables/{name}.csv" for name in TABLES] + ["results/seeded/figures/fig12_seeds.png"]
    args = (*targets, "--configfile", "config/seeded.yaml")  # targets first: --configfile takes every word after it
    new = [f"{s}-s1" for s in sizes]
    expected = output_jobs(figures=["fig12_seeds"]) - Counter(["all"])  # targets named: no `all` job
    expected.update(trajectory_jobs(["ladder"], datasets))  # the token tables read them
    expected.update(job_key("ladder_train", model=m) for m in new)
    expected.update(job_key(r, model=m, dataset=d) for m in new for d in datasets for r in ("extract", "summarize"))
    assert planned_jobs(work, *args) == expected
    before = file_states(work, "results/ranks/**/*", "resources/ladder/*/models/**/*")
    smoke_before = file_states(work, "results/smoke/**/*")
    assert smoke_before  # the smoke run's tables, figures, logs and benchmarks
    result = snakemake(work, "--cores", "2", *args)
    assert result.returncode == 0, result.stdout[-5000:] + result.stderr[-5000:]
    after = file_states(work, "results/ranks/**/*", "resources/ladder/*/models/**/*")
    assert all(after[path] == state for path, state in before.items())
    fits = read_table(work / "results/seeded/tables/powerlaw_fits.csv")
    fitted = fits["note"].fillna("").eq("")  # a fitted law also carries the sizes' scatter beyond the seeds
    assert set(fits.loc[fitted, "noise"]) == {"documents+seeds+sizes"} and (fits["n_models"] == 2 * len(sizes)).all()
    assert set(fits.loc[~fitted, "noise"]) <= {"documents+seeds"}
    variance = read_table(work / "results/seeded/tables/seed_variance.csv")
    assert set(variance["size"]) == set(sizes) and (variance["n_seeds"] == 2).all()
    seed_fits = read_table(work / "results/seeded/tables/seed_fits.csv")
    assert set(seed_fits["seed"]) == {0, 1} and seed_fits["exponent_seed_sd"].notna().all()
    metrics = read_table(work / "results/seeded/tables/metrics.csv")
    runs = metrics.drop_duplicates("model").set_index("model")
    assert runs.loc["smoke-a-s1", "replica_of"] == "smoke-a" and runs.loc["smoke-a-s1", "seed"] == 1
    assert (work / "results/seeded/figures/fig12_seeds.png").stat().st_size > 5000
    # the smoke configuration's own tables and figures stand as they were, and switching back to it plans nothing
    assert file_states(work, "results/smoke/**/*") == smoke_before
    assert planned_jobs(work, "--configfile", "config/smoke.yaml") == Counter()
    assert planned_jobs(work, *args) == Counter()


# --- PolyPythias (config/polypythia.yaml), planned offline; replicas checked like checkpoints -------------


def polypythia() -> dict:
    import yaml

    from tests.conftest import REPO

    return yaml.safe_load((REPO / "config/polypythia.yaml").read_text())


def test_polypythia_is_five_sizes_by_ten_seeds_with_the_architectures_sizes() -> None:
    """Every run's S is its size's, checked against the architecture instantiated on the meta device."""
    from rankscale.plan import build_plan
    from tests.test_paper import MODELS as PAPER_MODELS
    from tests.test_paper import PAPER, meta_count

    config = polypythia()
    plans = build_plan(config, check_paths=False)
    assert len(plans) == 50
    sizes = ("14m", "31m", "70m", "160m", "410m")
    for size in sizes:
        runs = [p for p in plans.values() if p.replica_of == f"pythia-{size}" or p.name == f"pythia-{size}"]
        assert sorted(p.seed for p in runs) == list(range(10))
        assert {p.source.location for p in runs if p.seed} == {
            f"EleutherAI/pythia-{size}-seed{s}" for s in range(1, 10)
        }
        entries = [m for m in config["models"] if m["name"] in {p.name for p in runs}]
        published = PAPER_MODELS[f"pythia-{size}"]["S"]
        assert meta_count(f"pythia-{size}").non_embedding == published  # the architecture's own count
        assert {m["S"] for m in entries} == {published}  # every run of the size
    assert {p.info()["replica_of"] for p in plans.values()} == {f"pythia-{s}" for s in sizes}
    assert config["datasets"] == PAPER["datasets"]


def test_polypythia_plans_offline(tmp_path) -> None:
    from rankscale.tables import TABLES
    from tests.conftest import REPO, copy_workflow, planned_jobs, study_figures

    jobs = planned_jobs(copy_workflow(tmp_path / "wf"), "--cores", "8", "--configfile", "config/polypythia.yaml")
    by_rule: dict[str, int] = {}
    for key, n in jobs.items():
        by_rule[key.split("[")[0]] = by_rule.get(key.split("[")[0], 0) + n
    # one tokenizer (pythia-14m's) for all 50 runs, on the paper's 8 datasets
    # 50 runs and the tokenizer they share each downloaded once, on the host that runs snakemake
    assert by_rule == {"download": 51, "corpus": 8, "tokenize": 8, "token_kinds": 1, "extract": 400,
                       "summarize": 400, "trajectories": 8, "table": len(TABLES),
                       "figure": len(study_figures((REPO, "config/polypythia.yaml"))),  # no checkpoints
                       "all": 1}  # fmt: skip


@pytest.mark.parametrize(
    ("change", "message"),
    [
        ({"seed": None}, r"models\[2\]\.seed: model 'pythia-70m-seed1' is one of the training runs of 'pythia-70m'"),
        ({"replica_of": "pythia-7m"}, r"models\[2\]\.replica_of: 'pythia-7m' is no model's size"),
        ({"family": "other"}, r"models\[2\]\.family: training runs of 'pythia-70m' must share one family"),
        ({"seed": 0}, r"seed: training runs of 'pythia-70m' repeat a seed: \[0, 0\]"),
    ],
)
def test_replicas_are_checked_like_checkpoints(change: dict, message: str) -> None:
    from rankscale.config import ConfigError
    from rankscale.plan import build_plan

    config = polypythia()
    config["models"] = [m for m in config["models"] if m["name"] in ("pythia-70m", "pythia-70m-seed1", "pythia-14m")]
    assert [m["name"] for m in config["models"]] == ["pythia-14m", "pythia-70m", "pythia-70m-seed1"]
    config["models"][2].update(change)
    with pytest.raises(ConfigError, match=message):
        build_plan(config, check_paths=False)
