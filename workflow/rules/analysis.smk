# Cheap analysis, recomputable from rank arrays alone: per model x dataset summaries (totals on
# the k grid, rank histogram, lognormal fit, N-token runs, per-document statistics and their
# bootstrap replicates), then one job per table of rankscale.tables.TABLES: its CSV and the page the report shows.


rule summarize:
    input:
        unpack(summarize_inputs),
    output:
        summary="results/summary/{model}/{summary}.json",
        hist="results/summary/{model}/{summary}.hist.npz",
        boot="results/summary/{model}/{summary}.boot.npz",
    params:
        settings=SUMMARY_SETTINGS,
        code=CODE["summarize"],
        model=lambda wc: PLAN[wc.model].info(),  # family, training tokens D, the size it is a checkpoint of
        identity=lambda wc: PLAN[wc.model].identity(dataset(wc)).params(),
        dataset=lambda wc, output: dataset(wc),
    log:
        "logs/summarize/{model}/{summary}.log",
    benchmark:
        "results/benchmarks/summarize/{model}/{summary}.tsv"
    conda:
        "../../envs/analysis.yaml"
    script:
        "../scripts/summarize.py"


rule table:
    input:
        unpack(table_inputs),
    output:
        csv=f"{OUT}/tables/{{table}}.csv",
        # the table as the report shows it: a sortable, searchable page made from the CSV (rankscale.report.pages)
        page=reported(
            f"{OUT}/report/tables/{{table}}.html",
            caption="../report/table.rst",
            category="Tables",
            subcategory=lambda wc: subcategory(TABLES[wc.table].section),
            labels=lambda wc: table_labels(wc.table, f"{OUT}/tables/{wc.table}.csv"),
        ),
    params:
        settings=lambda wc: table_settings(config, wc.table),
        code=CODE["table"],
        caption=lambda wc, output: TABLES[wc.table].caption,
    log:
        f"{OUT}/logs/tables/{{table}}.log",
    benchmark:
        f"{OUT}/benchmarks/tables/{{table}}.tsv"
    conda:
        "../../envs/analysis.yaml"
    script:
        "../scripts/table.py"
