# Cheap analysis, recomputable from rank arrays alone: per model x dataset summaries (totals on
# the k grid, rank histogram, lognormal fit, N-token runs, per-document statistics and their
# bootstrap replicates), then one job per table of rankscale.tables.TABLES: its CSV and the page the report shows.


from rankscale.config import load_schema  # noqa: E402
from rankscale.plan.settings import default_k  # noqa: E402

DEFAULT_K = default_k(load_schema(SCHEMA_PATH))


rule summarize:
    localrule: True
    input:
        unpack(summarize_inputs),
    output:
        summary=f"{Layout.SUMMARY}.json",
        hist=f"{Layout.SUMMARY}.hist.npz",
        boot=f"{Layout.SUMMARY}.boot.npz",
    params:
        settings=SUMMARY_SETTINGS,
        code=CODE["summarize"],
        model=lambda wc: PLAN[wc.model].info(),  # family, training tokens D, the size it is a checkpoint of
        identity=lambda wc: PLAN[wc.model].identity(dataset(wc)).params(),
        dataset=lambda wc, output: dataset(wc),
        default_k=lambda wc, output: DEFAULT_K,  # the k above |V| left out without a warning: those not written
    log:
        Layout.log("summarize", "{model}/{summary}"),
    benchmark:
        Layout.SUMMARIZE_BENCHMARK
    conda:
        "../envs/analysis.yaml"
    script:
        "../scripts/summarize.py"


# Which tokens a larger model gets right: one job per family x dataset follows every scored token across the family's
# sizes, checkpoints and seeds (rankscale.trajectories); the four token tables read its counts.
rule trajectories:
    localrule: True
    input:
        unpack(trajectories_inputs),
    output:
        counts=LAYOUT.trajectories("{family}", "{dataset}", "npz"),
        meta=LAYOUT.trajectories("{family}", "{dataset}", "json"),
    params:
        settings=trajectory_settings(config),
        code=CODE["trajectories"],
        models=trajectories_models,
    log:
        LAYOUT.run_log("trajectories", "{family}/{dataset}"),
    benchmark:
        LAYOUT.run_benchmark("trajectories", "{family}/{dataset}")
    conda:
        "../envs/analysis.yaml"
    script:
        "../scripts/trajectories.py"


rule table:
    localrule: True
    input:
        unpack(table_inputs),
    output:
        csv=LAYOUT.table(),
        # the table as the report shows it: a sortable, searchable page made from the CSV (rankscale.report.pages)
        page=reported(
            LAYOUT.table_page(),
            caption="../report/table.rst",
            category="Tables",
            subcategory=lambda wc: subcategory(TABLES[wc.table].section),
            labels=lambda wc: table_labels(wc.table, LAYOUT.table(wc.table)),
        ),
    params:
        settings=lambda wc: table_settings(config, wc.table),
        code=lambda wc: TABLE_CODE[wc.table],
        caption=lambda wc, output: TABLES[wc.table].caption,  # as the table's page shows it (scripts/table.py)
        # and as the report reads it (workflow/report/table.rst): reStructuredText, escaped
        report_caption=lambda wc, output: caption_rst(TABLES[wc.table].caption),
    log:
        LAYOUT.run_log("tables", "{table}"),
    benchmark:
        LAYOUT.run_benchmark("tables", "{table}")
    conda:
        "../envs/analysis.yaml"
    script:
        "../scripts/table.py"
