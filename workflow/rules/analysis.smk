# Cheap analysis, recomputable from rank arrays alone: per model x dataset summaries
# (RBP_k grid, CE, rank histogram, lognormal fit, N-token runs), then the tidy tables.


rule summarize:
    input:
        ranks="results/ranks/{model}/{dataset}.npz",
        meta="results/ranks/{model}/{dataset}.json",
        tokens_meta=lambda wc: f"results/tokens/{PLAN[wc.model].tokenizer_key}/{wc.dataset}.npz.json",
    output:
        summary="results/summary/{model}/{dataset}.json",
        hist="results/summary/{model}/{dataset}.hist.npz",
    params:
        analysis=ANALYSIS,
        family=lambda wc: PLAN[wc.model].family,
        identity=lambda wc: PLAN[wc.model].identity_for(wc.dataset),
    log:
        "logs/summarize/{model}/{dataset}.log",
    benchmark:
        "results/benchmarks/summarize/{model}/{dataset}.tsv"
    conda:
        "../../envs/analysis.yaml"
    script:
        "../scripts/summarize.py"


rule tables:
    input:
        expand("results/summary/{model}/{dataset}.json", model=MODELS, dataset=DATASETS),
    output:
        metrics=report("results/tables/metrics.csv", caption="../report/metrics.rst", category="Tables"),
        powerlaw=report("results/tables/powerlaw_fits.csv", caption="../report/powerlaw.rst", category="Tables"),
        lognormal=report("results/tables/lognormal_fits.csv", caption="../report/lognormal.rst", category="Tables"),
        emergence=report("results/tables/emergence.csv", caption="../report/emergence.rst", category="Tables"),
    log:
        "logs/tables.log",
    benchmark:
        "results/benchmarks/tables.tsv"
    conda:
        "../../envs/analysis.yaml"
    script:
        "../scripts/tables.py"
