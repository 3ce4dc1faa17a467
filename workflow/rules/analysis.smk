# Cheap analysis, recomputable from rank arrays alone: per model x dataset summaries (totals on
# the k grid, rank histogram, lognormal fit, N-token runs, per-document statistics and their
# bootstrap replicates), then one job per table of rankscale.tables.TABLES.


rule summarize:
    input:
        ranks="results/ranks/{model}/{dataset}.npz",
        meta="results/ranks/{model}/{dataset}.json",
        tokens_meta=lambda wc: f"results/tokens/{PLAN[wc.model].tokenizer_key}/{wc.dataset}.npz.json",
        corpus_meta="results/corpus/{dataset}.json",  # the dataset's documents: what every family's bootstrap draws
        token_table=token_table_input,  # token kinds (the `kind` stratum) and byte lengths (bits per byte)
    output:
        summary="results/summary/{model}/{dataset}.json",
        hist="results/summary/{model}/{dataset}.hist.npz",
        boot="results/summary/{model}/{dataset}.boot.npz",
    params:
        settings=SUMMARY_SETTINGS,
        code=CODE["summarize"],
        model=lambda wc: PLAN[wc.model].info(),  # family, training tokens D, the size it is a checkpoint of
        identity=lambda wc: PLAN[wc.model].identity(wc.dataset).params(),
    log:
        "logs/summarize/{model}/{dataset}.log",
    benchmark:
        "results/benchmarks/summarize/{model}/{dataset}.tsv"
    conda:
        "../../envs/analysis.yaml"
    script:
        "../scripts/summarize.py"


rule table:
    input:
        unpack(table_inputs),
    output:
        report("results/tables/{table}.csv", caption="../report/table.rst", category="Tables"),
    params:
        settings=lambda wc: table_settings(config, wc.table),
        code=CODE["table"],
        caption=lambda wc, output: TABLES[wc.table].caption,
    log:
        "logs/tables/{table}.log",
    benchmark:
        "results/benchmarks/tables/{table}.tsv"
    conda:
        "../../envs/analysis.yaml"
    script:
        "../scripts/table.py"
