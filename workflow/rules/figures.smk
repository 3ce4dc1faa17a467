# One job per figure of rankscale.plots.FIGURES, as PNG (in the report) and PDF: changing one
# figure's settings reruns that figure only.


rule figure:
    input:
        unpack(figure_inputs),
    output:
        # listed in the report under its analysis, by figure number and title (rankscale.plots.FIGURES)
        png=reported(
            f"{OUT}/figures/{{figure}}.png",
            caption="../report/figure.rst",
            category="Figures",
            subcategory=lambda wc: FIGURES[wc.figure].subcategory,
            labels=lambda wc: FIGURES[wc.figure].labels(),
        ),
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
