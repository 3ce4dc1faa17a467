# Figures mirroring the paper's, as PNG (in the report) and PDF.


rule figures:
    input:
        metrics="results/tables/metrics.csv",
        powerlaw="results/tables/powerlaw_fits.csv",
        lognormal="results/tables/lognormal_fits.csv",
        emergence="results/tables/emergence.csv",
        hists=expand("results/summary/{model}/{dataset}.hist.npz", model=MODELS, dataset=DATASETS),
    output:
        [figure_output(name) for name in FIGURE_NAMES],
        expand("results/figures/{name}.pdf", name=FIGURE_NAMES),
    params:
        figures=config["figures"],
        models=MODELS,
        datasets=DATASETS,
    log:
        "logs/figures.log",
    benchmark:
        "results/benchmarks/figures.tsv"
    conda:
        "../../envs/analysis.yaml"
    script:
        "../scripts/figures.py"
