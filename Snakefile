# rankscale: how language models rank the correct next token, and how that scales with size.
# corpus -> tokens -> rank arrays (per model x dataset) -> metrics -> fits -> figures -> report

from snakemake.utils import min_version

min_version("9.0")


# A --configfile that defines `datasets` is a complete configuration and replaces the default
# (Snakemake would otherwise deep-merge it into config/config.yaml, leaking default datasets
# and ladder settings into the user's study). `--config key=value` still overrides single values.
if "datasets" not in config:

    configfile: "config/config.yaml"


include: "workflow/rules/common.smk"
include: "workflow/rules/corpus.smk"
include: "workflow/rules/ladder.smk"
include: "workflow/rules/extract.smk"
include: "workflow/rules/analysis.smk"
include: "workflow/rules/figures.smk"
include: "workflow/rules/run_summary.smk"


# The report opens on what the last successful run found and what produced it (results/<run>/report/landing.rst,
# written with the manifest; common.smk)
report: REPORT_PAGE


# On a cluster only the heavy jobs are submitted (extract, ladder_train, ladder_tokenizer, gguf_convert): the
# rest run on the host that runs snakemake, where the network is (downloads, hub corpora and tokenizers) and
# where a job of a second costs no queue wait (summaries, tables, figures). Ignored on a workstation.
localrules:
    all,
    download,
    corpus,
    tokenize,
    token_kinds,
    ladder_corpus,
    summarize,
    trajectories,
    table,
    figure,


rule all:
    input:
        TABLE_FILES,
        TABLE_PAGES,
        FIGURE_FILES,
    default_target: True


onsuccess:
    # results/<run>/manifest.json: the commit, the configuration's digest, versions, host, devices and per-rule wall
    # times behind these results (rankscale.manifest); rewritten only when it changes. Then the report's landing page
    # from it and the tables (rankscale.report.landing), and what the run found (rankscale.run_summary)
    write_manifest()
    write_landing()
    print_summary()  # where the results are, what the laws came out as, the warnings, the report's command
