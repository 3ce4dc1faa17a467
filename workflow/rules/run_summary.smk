# What a run says when it ends (rankscale.run_summary), the command that reports it, and a `--report` that cannot
# report another configuration's results by mistake.

from rankscale.report import command as report_command  # noqa: E402

REPORT_COMMAND = report_command.report_command(Path(OUT), workflow.configfiles, DEFAULT_CONFIG)


def job_logs():
    """The logs of the jobs behind this configuration's results: extraction, summaries, tables, figures."""
    pairs = [(m, d) for m in MODELS for d in DATASETS]
    return [
        *(Path(Layout.log("extract", f"{m}/{LAYOUT.rank_keys[(m, d)]}")) for m, d in pairs),
        *(Path(Layout.log("summarize", f"{m}/{LAYOUT.summary_keys[(m, d)]}")) for m, d in pairs),
        *(Path(LAYOUT.run_log("tables", t)) for t in TABLES),
        *(Path(LAYOUT.run_log("figures", f)) for f in FIGURES),
    ]


def print_summary():
    """Index the rank arrays, keep the report's command, then say where the results are, what the laws came out as,
    the warnings and how to report; the run stands without. Its code (pandas) is imported here, after a run."""
    from rankscale import results as results_index
    from rankscale import run_summary

    try:
        report_command.write_report_command(Path(OUT), REPORT_COMMAND)
        # results/<run>/arrays.json: which rank array is each model's on each dataset (rankscale.results.load)
        results_index.write_index(Path(OUT), {(m, d): LAYOUT.ranks(m, d) for m in MODELS for d in DATASETS})
        level = float(config["analysis"]["bootstrap"]["level"])
        print(run_summary.RunSummary.of(Path(OUT), level, job_logs(), REPORT_COMMAND).text(), file=sys.stderr)
    except (OSError, ValueError, KeyError) as exc:
        print(f"rankscale: could not summarize the run in {OUT}: {exc}", file=sys.stderr)


if workflow.is_main_process and (refusal := report_command.report_refusal(sys.argv, Path(OUT), Path(MANIFEST))):
    print(refusal, file=sys.stderr)
    sys.exit(1)
