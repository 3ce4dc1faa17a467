# One job per figure of rankscale.plots.FIGURES, as PNG (in the report) and PDF: changing one
# figure's settings reruns that figure only.


rule figure:
    localrule: True
    input:
        unpack(figure_inputs),
    output:
        # listed in the report under its analysis, by figure number and title (rankscale.plots.FIGURES)
        png=reported(
            LAYOUT.figure(ext="png"),
            caption="../report/figure.rst",
            category="Figures",
            subcategory=lambda wc: FIGURES[wc.figure].subcategory,
            labels=lambda wc: FIGURES[wc.figure].labels(),
        ),
        pdf=LAYOUT.figure(ext="pdf"),
    params:
        settings=lambda wc: figure_settings(config, wc.figure, DATASETS, MODELS),
        code=lambda wc: FIGURE_CODE[wc.figure],
        # its caption as the report reads it (workflow/report/figure.rst): reStructuredText, escaped
        report_caption=lambda wc, output: caption_rst(FIGURES[wc.figure].caption),
    log:
        LAYOUT.run_log("figures", "{figure}"),
    benchmark:
        LAYOUT.run_benchmark("figures", "{figure}")
    conda:
        "../envs/analysis.yaml"
    script:
        "../scripts/figure.py"
