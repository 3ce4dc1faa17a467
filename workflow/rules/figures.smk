# One job per figure of rankscale.plots.FIGURES, as PNG (in the report) and PDF: changing one
# figure's settings reruns that figure only.


rule figure:
    input:
        unpack(figure_inputs),
    output:
        png=report(f"{OUT}/figures/{{figure}}.png", caption="../report/figure.rst", category="Figures"),
        pdf=f"{OUT}/figures/{{figure}}.pdf",
    params:
        settings=lambda wc: figure_settings(config, wc.figure, DATASETS, MODELS),
        code=CODE["figure"],
        caption=lambda wc, output: FIGURES[wc.figure].caption,
    log:
        f"{OUT}/logs/figures/{{figure}}.log",
    benchmark:
        f"{OUT}/benchmarks/figures/{{figure}}.tsv"
    conda:
        "../../envs/analysis.yaml"
    script:
        "../scripts/figure.py"
