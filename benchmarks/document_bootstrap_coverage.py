"""Coverage of the document bootstrap's percentile intervals against a token bootstrap's (docs/science.md,
"Uncertainty": tokens inside one document are correlated, so intervals resample documents, never tokens).

Corpora whose documents differ: document d has hit rate p (1 + u_d), u_d uniform on +- `effect`, shared by its
tokens (and, in a family, by every size). Each simulation draws a corpus and judges whether the 95% percentile
interval holds the truth, with the workflow's document bootstrap (`replicate_totals`, B replicates) and with
each token its own resampling unit:

- `rbp`: one model's RBP_1 (truth 0.3), 120 documents of 40 tokens, effect 0.6;
- `alpha`: the exponent of -log RBP = C S^-alpha over five sizes scored on the same 150 documents of 80 tokens
  (alpha 0.15, C 4, effect 0.35), the documents drawn once per replicate for the whole family (paired); the token
  bootstrap resamples each size's pooled tokens on its own.

    python benchmarks/document_bootstrap_coverage.py [--sims 1000] [--replicates 400] [--studies rbp alpha]
"""

from __future__ import annotations

import argparse
import math
import time

import numpy as np

from rankscale.bootstrap import interval, replicate_totals
from rankscale.laws import Points, PowerLaw, fit_power_law

SIZES = np.array([1e5, 4e5, 1.6e6, 6.4e6, 2.56e7])


def simulate_documents(rng: np.random.Generator, p: np.ndarray, documents: int, tokens: int,
                       effect: float) -> np.ndarray:  # fmt: skip
    """Hits per document (rows) and model (columns): document d has hit rate p * (1 + u_d), u_d uniform."""
    u = rng.uniform(-effect, effect, documents)
    return np.stack([rng.binomial(tokens, q * (1 + u)) for q in np.atleast_1d(p)], axis=1)


def rbp_coverage(sims: int, replicates: int, seed: int) -> dict[str, float]:
    """Shares of 95% intervals of one model's RBP_1 holding the truth, documents or tokens resampled."""
    rng = np.random.default_rng(seed)
    documents, tokens, truth = 120, 40, 0.3
    covered = {"documents": 0, "tokens": 0}
    for sim in range(sims):
        hits = simulate_documents(rng, np.array([truth]), documents, tokens, 0.6)[:, 0]
        n = np.full(documents, tokens)
        estimate = hits.sum() / n.sum()
        by_doc = replicate_totals({"n": n, "hits": hits}, np.arange(documents), documents, replicates, sim, "doc")
        low, high = interval(by_doc["hits"] / by_doc["n"], 0.95, estimate)
        covered["documents"] += bool(low <= truth <= high)
        token_hits = np.concatenate([np.r_[np.ones(h), np.zeros(tokens - h)] for h in hits])
        size = token_hits.size
        by_token = replicate_totals({"n": np.ones(size), "hits": token_hits}, np.arange(size), size, replicates,
                                    sim, "t")  # fmt: skip
        low, high = interval(by_token["hits"] / by_token["n"], 0.95, estimate)
        covered["tokens"] += bool(low <= truth <= high)
    return {key: n / sims for key, n in covered.items()}


def alpha_coverage(sims: int, replicates: int, seed: int) -> dict[str, float]:
    """Shares of 95% intervals of a family's exponent holding the truth: the paired document bootstrap's, and a
    token bootstrap's (a replicate's hits binomial over each size's pooled tokens)."""
    rng = np.random.default_rng(seed)
    alpha, c, documents, tokens = 0.15, 4.0, 150, 80
    rbp = np.exp(-c * SIZES ** (-alpha))
    points = Points.of(SIZES)
    covered = {"documents": 0, "tokens": 0}
    for sim in range(sims):
        hits = simulate_documents(rng, rbp, documents, tokens, 0.35)
        n = np.full(documents, tokens)
        observed = hits.sum(axis=0) / n.sum()
        estimate = fit_power_law(SIZES, -np.log(observed)).alpha
        reps = replicate_totals({"n": n, "hits": hits}, np.arange(documents), documents, replicates, sim, "doc")
        by_doc = PowerLaw.fit_replicates(points, -np.log(reps["hits"] / reps["n"][:, None]), None, 0)["alpha"]
        low, high = interval(by_doc, 0.95, estimate)
        covered["documents"] += bool(low <= alpha <= high)
        by_token = rng.binomial(documents * tokens, observed, size=(replicates, len(SIZES))) / (documents * tokens)
        low, high = interval(PowerLaw.fit_replicates(points, -np.log(by_token), None, 0)["alpha"], 0.95, estimate)
        covered["tokens"] += bool(low <= alpha <= high)
    return {key: n / sims for key, n in covered.items()}


STUDIES = {"rbp": rbp_coverage, "alpha": alpha_coverage}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sims", type=int, default=1000)
    parser.add_argument("--replicates", type=int, default=400)
    parser.add_argument("--seed", type=int, default=20261128)
    parser.add_argument("--studies", nargs="+", choices=sorted(STUDIES), default=list(STUDIES))
    args = parser.parse_args()
    print(f"{args.sims} simulated corpora a study, B = {args.replicates}; coverage of the 95% percentile interval")
    print("| study | documents resampled | tokens resampled | seconds |")
    print("| --- | --- | --- | --- |")
    for k, name in enumerate(args.studies):
        start = time.perf_counter()
        found = STUDIES[name](args.sims, args.replicates, args.seed + k)
        cells = " | ".join(f"{100 * found[u]:.1f} ± {100 * math.sqrt(found[u] * (1 - found[u]) / args.sims):.1f}%"
                           for u in ("documents", "tokens"))  # fmt: skip
        print(f"| {name} | {cells} | {time.perf_counter() - start:.0f} |", flush=True)


if __name__ == "__main__":
    main()
