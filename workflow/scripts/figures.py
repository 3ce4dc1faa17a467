"""Rule figures: the tables -> every figure as PNG and PDF."""

import sys

snakemake = globals()["snakemake"]
sys.path.insert(0, f"{snakemake.scriptdir}/../../src")  # the package, in any environment


import numpy as np
import pandas as pd

from rankscale import plots
from rankscale.logs import setup_logging

log = setup_logging(snakemake.log[0])
cfg = snakemake.params.figures
datasets = snakemake.params.datasets
metrics = pd.read_csv(snakemake.input.metrics, dtype={"k": "Int64"})
fits = pd.read_csv(snakemake.input.powerlaw, dtype={"k": "Int64"})
lognormal = pd.read_csv(snakemake.input.lognormal)
emergence = pd.read_csv(snakemake.input.emergence)
hists = {}
for path, (model, dataset) in zip(
    snakemake.input.hists, [(m, d) for m in snakemake.params.models for d in datasets], strict=True
):
    with np.load(path) as data:
        hists[(model, dataset)] = data["counts"]
out = {p.rsplit("/", 1)[1].rsplit(".", 1)[0]: p for p in snakemake.output if p.endswith(".png")}
plots.fig_rbp(metrics, fits, datasets, [1], out["fig3_rbp1"])
plots.fig_rbp(metrics, fits, datasets, cfg.get("rbp_k", [10, 50, 100]), out["fig4_rbp_k"])
plots.fig_rbp(metrics, fits, datasets, cfg.get("large_k", [1000, 20000, 30000]), out["fig5_large_k"])
plots.fig_r2_alpha(fits, datasets, out["fig6_r2_alpha_vs_k"])
plots.fig_emergence(emergence, fits, datasets, cfg.get("emergence_k", 10), out["fig7_emergence"])
plots.fig_ce_vs_rbp1(metrics, fits, datasets, out["fig8a_ce_vs_rbp1"])
plots.fig_rank_histogram(lognormal, hists, datasets, out["fig8b_rank_histogram"])
plots.fig_mu_sigma(lognormal, datasets, out["fig8c_mu_sigma"])
log.info("wrote %d figures", len(out))
