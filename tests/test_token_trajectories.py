"""Per-token trajectories (rankscale.trajectories) on synthetic families with planted trajectories: learning
sizes recovered exactly, churn against a brute-force count, net churn against the summaries' RBP_k, intervals
that cover what was planted, alignment checked from the sidecars, and every table built from the results."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from rankscale.config import load_yaml, validate
from rankscale.identity import OWN_SHA, TOKENS_SHA
from rankscale.metrics import METRICS
from rankscale.plan.settings import trajectory_settings
from rankscale.rankfile import RankArrays
from rankscale.strata import StrataSettings
from rankscale.summary import ModelInfo, Resampling, SummarySettings, summarize
from rankscale.tables import TableSettings, build_table
from rankscale.trajectories import TrackedModel, TrajectorySettings, learning_codes, load, save, trajectories
from rankscale.trajectories.compute import permutations
from rankscale.windows import WindowSpec
from tests.conftest import REPO

DOCS, PER_DOC = 40, 50
T = DOCS * PER_DOC
KS = [1, 10, 100]
STRATA = StrataSettings(["frequency"], {"frequency": [10, 100]}, [1, 10])


def tokens(seed: int = 0) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    doc = np.repeat(np.arange(DOCS), PER_DOC).astype(np.uint32)
    pos = np.tile(np.arange(1, PER_DOC + 1), DOCS).astype(np.uint32)
    target = np.random.default_rng(seed).integers(0, 300, T).astype(np.uint32)
    return doc, pos, target


def meta(name: str, **change) -> dict:
    base = {"model": name, TOKENS_SHA: "t", "tokenizer_sha256": "z", "windows": {"max_length": PER_DOC},
            "add_special_tokens": False, "special_prefix_tokens": 0, "n_tokens": T, "vocab_size": 5000,
            "dataset": "d", "ties": "ge", OWN_SHA: name}  # fmt: skip
    return {**base, **change}


def family(ranks: list[np.ndarray], seeds: list[int | None] | None = None, sizes: list[str] | None = None):
    """Models m0, m1, ... of S = 10^(3 + i) (runs of one size share its S and name)."""
    sizes = sizes or [f"m{i}" for i in range(len(ranks))]
    seeds = seeds or [None] * len(ranks)
    order = sorted(set(sizes), key=sizes.index)
    models = [TrackedModel(f"m{i}", 10 ** (3 + order.index(s)), None, f"m{i}", s, seeds[i], True)
              for i, s in enumerate(sizes)]  # fmt: skip
    doc, pos, target = tokens()
    arrays = [RankArrays(r.astype(np.uint32), -np.log(r).astype(np.float32), doc, pos, target) for r in ranks]
    metas = [meta(m.name) for m in models]
    return models, arrays, metas


def run(models, arrays, metas, replicates: int = 200):
    bootstrap = Resampling(np.arange(DOCS), DOCS, replicates, 0, "d")
    return trajectories("f", "d", models, lambda i: (arrays[i], metas[i]), bootstrap, KS, STRATA,
                        WindowSpec(PER_DOC, None, None), None)  # fmt: skip


def planted(noise: bool, seed: int = 1) -> tuple[np.ndarray, list[np.ndarray]]:
    """Each token learned (rank 1) from a planted size on (0..3; 4 = never), ranks before it far outside the top
    100 (with noise: anywhere in 101..4000, and after it anywhere in the top 1)."""
    rng = np.random.default_rng(seed)
    learn = rng.integers(0, 5, T)
    ranks = []
    for j in range(4):
        before = rng.integers(101, 4000, T) if noise else np.full(T, 500)
        ranks.append(np.where(learn <= j, 1, before))
    return learn, ranks


def test_learning_codes_recover_planted_sizes_exactly() -> None:
    learn, ranks = planted(noise=True)
    hit = np.stack(ranks) <= 1
    codes = learning_codes(hit)
    assert np.array_equal(codes, learn)  # 4 sizes: 4 = never
    unstable = learning_codes(np.array([[True], [False], [False]]))
    assert unstable.tolist() == [4]  # in, then out: sizes + 1
    relearned = learning_codes(np.array([[True], [False], [True]]))
    assert relearned.tolist() == [2]  # learned (again) at size 2 and kept


def test_planted_learning_sizes_are_recovered_without_noise() -> None:
    learn, ranks = planted(noise=False)
    result = run(*family(ranks))
    counts = result.point["learning"][0, KS.index(1)]  # every token (group 0), k = 1
    assert np.array_equal(counts[:5], np.bincount(learn, minlength=5)) and counts[5] == 0


def test_planted_shares_lie_in_their_intervals_with_noise() -> None:
    """Document effects: each document draws its own mix of learning sizes around the planted shares."""
    rng = np.random.default_rng(3)
    truth = np.array([0.1, 0.2, 0.3, 0.15, 0.25])
    mix = rng.dirichlet(truth * 20, DOCS)
    learn = np.concatenate([rng.choice(5, PER_DOC, p=p) for p in mix])
    ranks = [np.where(learn <= j, rng.integers(1, 2, T), rng.integers(101, 4000, T)) for j in range(4)]
    result = run(*family(ranks), replicates=400)
    tokens_rep = result.replicates["tokens"][:, 0]
    shares = result.replicates["learning"][:, 0, KS.index(1), :5] / tokens_rep[:, None]
    low, high = np.quantile(shares, [0.025, 0.975], axis=0)
    assert np.all((low <= truth) & (truth <= high)), (low, truth, high)


def brute_force(a: np.ndarray, b: np.ndarray, k: int) -> tuple[int, int]:
    gained = sum(1 for x, y in zip(a, b, strict=True) if x > k and y <= k)
    lost = sum(1 for x, y in zip(a, b, strict=True) if x <= k and y > k)
    return gained, lost


def lognormal_family(n: int, seed: int = 0) -> list[np.ndarray]:
    """Sizes that improve on average, each token with its own noise: churn both ways."""
    rng = np.random.default_rng(seed)
    base = rng.normal(3.0, 1.5, T)
    return [
        np.clip(np.round(np.exp(base - 0.3 * j + rng.normal(0, 0.8, T))), 1, 4000).astype(np.int64) for j in range(n)
    ]


def test_churn_equals_a_brute_force_count_and_net_equals_delta_rbp() -> None:
    ranks = lognormal_family(4)
    models, arrays, metas = family(ranks)
    result = run(models, arrays, metas)
    settings = SummarySettings(2, KS, [1], [1], KS, 10, 0, True, 5, StrataSettings([], {}, KS))
    resampling = Resampling.for_dataset(np.arange(DOCS), DOCS, 10, 0, "d")
    window = WindowSpec(PER_DOC, None, None)
    rbp = []
    for m, a, mt in zip(models, arrays, metas, strict=True):
        info = ModelInfo("f", None, m.name, True, None, m.name)
        summary, _, _ = summarize(a, {**mt, "S": m.S}, settings, resampling, info, window, None)
        values = METRICS["rbp"].compute(summary.totals())  # the summaries' RBP_k, as metrics.csv has it
        rbp.append([float(values[summary.k.index(k)]) for k in KS])
    for i, k in enumerate(KS):
        for j in range(3):
            gained, lost = brute_force(ranks[j], ranks[j + 1], k)
            assert result.point["gained"][0, i, j] == gained and result.point["lost"][0, i, j] == lost
            net = (result.point["gained"][0, i, j] - result.point["lost"][0, i, j]) / T
            assert net == pytest.approx(rbp[j + 1][i] - rbp[j][i], abs=1e-15)


def test_seed_chains_average_and_the_seed_floor() -> None:
    """Two seeds of each of three sizes: the size axis is averaged over the two chains, seeds give the floor."""
    ranks = lognormal_family(6, seed=2)
    sizes = ["a", "a", "b", "b", "c", "c"]
    models, arrays, metas = family(ranks, seeds=[0, 1, 0, 1, 0, 1], sizes=sizes)
    result = run(models, arrays, metas)
    assert result.sizes == ["a", "b", "c"] and result.n_chains == 2 and result.seeded_sizes == 3
    k = KS.index(10)
    for j, (x, y) in enumerate([(0, 2), (2, 4)]):
        g = [brute_force(ranks[x + c], ranks[y + c], 10)[0] for c in (0, 1)]
        assert result.point["gained"][0, k, j] == pytest.approx(np.mean(g))
    seeds = [p for p in result.pairs if p.axis == "seed"]
    assert [(p.before, p.after) for p in seeds] == [("m0", "m1"), ("m2", "m3"), ("m4", "m5")]
    p = result.pairs.index(seeds[0])
    assert result.point["pairs"][p, k, 2] == brute_force(ranks[0], ranks[1], 10)[0]
    assert result.point["slopes"][-1] > 0  # the slopes' variance across seeds


def test_misaligned_and_single_models_get_notes_not_crashes() -> None:
    ranks = lognormal_family(3)
    models, arrays, metas = family(ranks)
    metas[1] = meta("m1", **{TOKENS_SHA: "other"})
    doc, pos, target = tokens(seed=9)  # same sidecar, other targets
    arrays[2] = RankArrays(arrays[2].rank, arrays[2].logprob, doc, pos, target)
    result = run(models, arrays, metas)
    assert [m.name for m in result.models] == ["m0"]
    assert any("m1 left out" in n and TOKENS_SHA in n for n in result.notes)
    assert any("m2 left out" in n and "scored tokens" in n for n in result.notes)
    assert any("nothing to follow" in n for n in result.notes)
    one = run(*family(ranks[:1]))
    assert one.point == {} and "1 aligned model(s)" in one.notes[-1]


def test_slopes_of_a_pure_shift_match_the_permutation_noise() -> None:
    """Every token improving alike plus noise: the slopes' spread is about the permutation's noise estimate."""
    rng = np.random.default_rng(4)
    base = rng.normal(4.0, 1.0, T)
    ranks = [np.maximum(1, np.round(np.exp(base - 0.2 * j + rng.normal(0, 0.3, T)))) for j in range(6)]
    result = run(*family(ranks))
    s = result.point["slopes"]
    sd = np.sqrt(s[1] / T - (s[0] / T) ** 2)
    p = result.point["permuted"]
    sd_perm = np.sqrt(np.mean(p[:, 1] / T - (p[:, 0] / T) ** 2))
    assert sd == pytest.approx(sd_perm, rel=0.25)
    assert len(permutations(2, 0)) == 0 and all(sorted(q) == list(range(6)) for q in permutations(6, 0))


def test_saved_results_read_back_and_build_every_trajectory_table(tmp_path) -> None:
    ranks = lognormal_family(4)
    result = run(*family(ranks), replicates=50)
    save(result, tmp_path / "t.npz", tmp_path / "t.json")
    back = load(tmp_path / "t.npz", tmp_path / "t.json")
    assert back.models == result.models and back.pairs == result.pairs and back.strata == result.strata
    for name in result.point:
        assert np.array_equal(back.point[name], result.point[name])
    settings = TableSettings(level=0.95, law_k=[1, 10], law_form=None, forms=None, refits=None, seed=None)
    one = run(*family(ranks[:1]))
    for name in ("token_churn", "token_learning", "token_slopes", "rank_transitions"):
        frame = build_table(name, [], {}, settings, None, [back, one])
        assert not frame.empty and "note" in frame.columns, name
        assert frame["note"].fillna("").str.contains("nothing to follow").any(), name


def check_run_tables(tables: Path) -> None:
    """The token tables of a finished run agree with its metrics: RBP_k at both ends of every size pair is the
    summaries' (metrics.csv) and the net churn is their difference."""
    metrics = pd.read_csv(tables / "metrics.csv")
    rbp = metrics[metrics["metric"] == "rbp"].set_index(["model", "dataset", "k"])["value"]
    churn = pd.read_csv(tables / "token_churn.csv")
    sizes = churn[(churn["axis"] == "size") & (churn["kind"] == "all")]
    assert not sizes.empty
    for row in sizes.to_dict("records"):  # one seed per size: a size is its final model's name
        assert row["rbp_from"] == pytest.approx(rbp[(row["from"], row["dataset"], row["k"])], abs=1e-12)
        assert row["rbp_to"] == pytest.approx(rbp[(row["to"], row["dataset"], row["k"])], abs=1e-12)
        assert row["net"] == pytest.approx(row["rbp_to"] - row["rbp_from"], abs=1e-12)
        assert row["gained_ci_low"] <= row["gained"] <= row["gained_ci_high"]
    learning = pd.read_csv(tables / "token_learning.csv")
    kept = learning[(learning["quantity"] == "kept_by") & (learning["kind"] == "all")]
    last = kept.loc[kept.groupby(["family", "dataset", "k"])["S"].idxmax()]
    for row in last.itertuples():  # learned and kept by the largest size is its RBP_k
        assert row.value == pytest.approx(rbp[(row.size, row.dataset, row.k)], abs=1e-12)
    for name in ("token_slopes", "rank_transitions"):
        assert not pd.read_csv(tables / f"{name}.csv").empty, name


@pytest.mark.slow
def test_the_smoke_runs_token_tables_agree_with_its_metrics(smoke_run) -> None:
    check_run_tables(smoke_run / "results/smoke/tables")


def test_trajectory_params_read_back_typed() -> None:
    """The trajectories job's params (`trajectory_settings` of the validated default configuration) type as
    TrajectorySettings: the k of law_k with 1, 10 and 100, the summaries' bootstrap draws, the strata."""
    config = validate(load_yaml(REPO / "config/config.yaml"))
    typed = TrajectorySettings.from_params(trajectory_settings(config))
    analysis = config["analysis"]
    assert typed.ks == sorted(set(analysis["law_k"]) | {1, 10, 100})
    assert (typed.replicates, typed.seed) == (analysis["bootstrap"]["replicates"], analysis["bootstrap"]["seed"])
    assert typed.strata.kinds == analysis["strata"] and typed.strata.k == sorted(analysis["law_k"])
    with pytest.raises(KeyError, match=r"\['level'\] are not fields of TrajectorySettings"):
        TrajectorySettings.from_params({**trajectory_settings(config), "level": 0.95})
