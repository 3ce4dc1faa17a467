# Validate the configuration before any job starts (filling in the schema's defaults) and resolve
# it into a plan. Every params value is canonical (rankscale.canon.canonical): Snakemake reruns a
# job when the repr of its params changes, so key order or 1 vs 1.0 must not show in them.
# A params function that takes `output` is "derived" for Snakemake and never triggers a rerun:
# runtime settings and report captions travel that way.

import re
import sys
from pathlib import Path

# this checkout, from the directory of this file: `workflow.basedir` is the importing Snakefile's where rankscale
# runs as a module (docs/pipelines.md)
try:
    WORKFLOW_DIR = Path(workflow.current_basedir).parent
except TypeError:  # a module's `snakefile:` given as github(...) or a URL
    sys.exit(f"rankscale: the module's `snakefile:` must be a file of a local clone, not {workflow.current_basedir}: "
             "its rules read their own code from disk to decide what reruns (docs/pipelines.md)")
REPO = WORKFLOW_DIR.parent
SRC = str(REPO / "src")
if SRC not in sys.path:
    sys.path.insert(0, SRC)

from rankscale.config import SCHEMA_PATH  # noqa: E402
from rankscale.downloads import extraction_downloads, hub_downloads  # noqa: E402
from rankscale.tokenizer_pin import pin_record  # noqa: E402
from rankscale.fingerprint import code_digest, entry_digests  # noqa: E402
from rankscale import manifest as manifest_module  # noqa: E402
from rankscale.layout import Layout, fill  # noqa: E402
from rankscale.plan import (  # noqa: E402
    corpus_params,
    corpus_spec,
    figure_settings,
    run_checkpoints,
    summary_settings,
    table_settings,
    tokenize_source,
    tokenizer_params,
    tokenizer_sources,
    training_params,
    trajectory_settings,
)
from rankscale.plan.overrides import apply_overrides, parse_overrides  # noqa: E402
from rankscale.plan.prepare import REFUSED, prepare, refusal, run_notes  # noqa: E402
from rankscale.plots import FIGURES, left_out  # noqa: E402
from rankscale.report.captions import rst as caption_rst  # noqa: E402
from rankscale.sections import subcategory  # noqa: E402
from rankscale.tables import TABLES  # noqa: E402

# the files given with --configfile, and the default they extend where none of them sets `datasets:` (Snakefile)
USER_CONFIGS = [Path(f) for f in workflow.overwrite_configfiles]
DEFAULT_CONFIG = REPO / "config/config.yaml"
EXTENDS_DEFAULT = len(workflow.configfiles) > len(USER_CONFIGS)
OVERRIDES = {}  # the command line's --config, with YAML types (Snakemake's are text inside a mapping or list)
try:  # rankscale.plan.prepare: the configuration stage, the same code `rankscale check` and the fuzzer run
    OVERRIDES = parse_overrides(workflow.config_settings.config_args or ())
    if Path(workflow.main_snakefile).resolve() == (WORKFLOW_DIR / "Snakefile").resolve():  # not under `module`,
        apply_overrides(config, OVERRIDES)  # where the importing Snakefile says what config rankscale gets
    PREPARED = prepare(config, workflow.configfiles, USER_CONFIGS, DEFAULT_CONFIG, OVERRIDES, SCHEMA_PATH)
except REFUSED as exc:  # one line per problem, naming the file or --config, before any job and without a traceback
    print(refusal(exc, USER_CONFIGS, DEFAULT_CONFIG, EXTENDS_DEFAULT, OVERRIDES), file=sys.stderr)
    sys.exit(1)
PLAN, LAYOUT = PREPARED.plans, PREPARED.layout  # the models; every path, keyed by meaning (rankscale.layout)

if workflow.is_main_process:  # said once, not by every job: inherited settings, unpinned inputs, the override's run
    for NOTE in run_notes(config, PREPARED, USER_CONFIGS, DEFAULT_CONFIG, EXTENDS_DEFAULT, OVERRIDES):
        print(f"rankscale: {NOTE}", file=sys.stderr)

MODELS = list(PLAN)
DATASETS = sorted(config["datasets"])  # a mapping has no order: figures' columns go by name
FAMILIES = sorted({plan.family for plan in PLAN.values()})  # one trajectories job per family x dataset
TOKENIZERS = tokenizer_sources(PLAN)
GGUF = {plan.gguf.digest: plan.gguf for plan in PLAN.values() if plan.gguf}  # converted once each
DOWNLOADS = hub_downloads(PLAN)  # hub repositories, fetched once each before any extraction (rule download)
LADDER = config.get("ladder")
LADDER_FILES = LAYOUT.ladder  # resources/ladder/<key>: the ladder's text, tokenizer, states and models

# what summaries are computed with: every k a table or figure reads is on their k grid
SUMMARY_SETTINGS = summary_settings(config)
# the code each cheap step runs (its script and every package module it imports): a change reruns it, a
# touch or a reformat does not (profiles/default sets --rerun-triggers without Snakemake's mtime-based
# `code`); the expensive rules carry format versions instead (rankscale.formats)
CODE = {
    step: code_digest(WORKFLOW_DIR / f"scripts/{step}.py") for step in ("summarize", "token_kinds", "trajectories")
}
# a table or figure job imports its entry's implementation by name (`Table.build`, `Figure.plot`: "module:function"):
# each carries its own code, its script's and its implementation's module (without the other entries' functions of
# that module), with what those import (rankscale.fingerprint.entry_digest): an edit to one figure's function reruns
# that figure alone, an edit to what several use reruns those
TABLE_CODE = entry_digests(WORKFLOW_DIR / "scripts/table.py", {name: t.build for name, t in TABLES.items()})
FIGURE_CODE = entry_digests(WORKFLOW_DIR / "scripts/figure.py", {name: f.plot for name, f in FIGURES.items()})

OUT = LAYOUT.out  # results/<run>: this configuration's own outputs
MANIFEST = LAYOUT.manifest
manifest_module.REPORTED = MANIFEST  # what `--report` shows (workflow/report/metadata.yaml, in this process)
TABLE_FILES = expand(LAYOUT.table(), table=TABLES)
TABLE_PAGES = expand(LAYOUT.table_page(), table=TABLES)  # the tables as the report shows them
# The report: its landing page is written with the manifest when a run succeeds (rankscale.report.landing). Before
# any run has succeeded there is nothing to report: outputs are not marked for it (Snakemake would stop at the
# first missing one) and the report's one line says so (workflow/report/no_results.rst). --report-after-run
# reports the run it follows.
LANDING = Path(LAYOUT.landing).resolve()
REPORTABLE = Path(MANIFEST).is_file() or "--report-after-run" in sys.argv
REPORT_PAGE = str(LANDING) if LANDING.is_file() or "--report-after-run" in sys.argv else "workflow/report/no_results.rst"
# a figure of checkpoints or seeds is left out of a study that has none (said on the report's landing page)
LEFT_OUT = left_out([plan.info() for plan in PLAN.values()])
FIGURE_FILES = expand(LAYOUT.figure(), figure=[f for f in FIGURES if f not in LEFT_OUT], ext=["png", "pdf"])


def alternatives(names):
    """A wildcard constraint matching exactly these names (a file of another configuration matches no rule)."""
    return "|".join(map(re.escape, sorted(set(names)))) or "^$"


wildcard_constraints:
    model=alternatives(MODELS),
    table=alternatives(TABLES),
    figure=alternatives(FIGURES),
    tok=alternatives(TOKENIZERS),
    digest="[0-9a-f]{16}",
    download=alternatives(DOWNLOADS),
    # file stems `<dataset>-<key>` (rankscale.layout): only this configuration's
    corpus=alternatives(LAYOUT.corpus_keys.values()),
    tokens=alternatives(LAYOUT.token_keys.values()),
    ranks=alternatives(LAYOUT.rank_keys.values()),
    summary=alternatives(LAYOUT.summary_keys.values()),
    family=alternatives(FAMILIES),
    dataset=alternatives(DATASETS),


def write_manifest():
    pairs = [(m, d) for m in MODELS for d in DATASETS]
    benchmarks = manifest_module.benchmark_files(LAYOUT, PLAN, DATASETS, TABLES, FIGURES, FAMILIES)
    sidecars = [Path(LAYOUT.ranks(m, d, "json")) for m, d in pairs]
    try:
        built = manifest_module.build(config, REPO, sidecars, benchmarks)
        manifest_module.write(built, Path(MANIFEST))
    except (OSError, ValueError) as exc:  # the run's results stand without it: say so, do not fail the run
        print(f"rankscale: could not write {MANIFEST}: {exc}", file=sys.stderr)


def table_labels(name, csv):
    """The report's entry for a table (rankscale.report.pages.labels: pandas, imported when a report is made)."""
    from rankscale.report.pages import labels

    return labels(name, csv)


def write_landing():
    """The report's landing page, from the tables and the manifest just written; the results stand without it.
    Its code (pandas, the laws) is imported here, after a run, never to plan one."""
    from rankscale.report import landing

    try:
        landing.write_landing(Path(OUT), float(config["analysis"]["bootstrap"]["level"]), LEFT_OUT)
    except (OSError, ValueError, KeyError) as exc:
        print(f"rankscale: could not write {LANDING}: {exc}", file=sys.stderr)


if workflow.is_main_process and Path(MANIFEST).is_file() and any(a.startswith("--report") for a in sys.argv):
    write_landing()  # as this code draws it, when a report is made (it is written with the manifest too, on success)


def reported(path, **how):
    """`path` marked for the report (`report(path, **how)`) once a run of this configuration has succeeded."""
    return report(path, **how) if REPORTABLE else path


def runtime_setting(model, key):
    return getattr(PLAN[model].runtime, key)


def tokenizer_input(wc):
    """The ladder tokenizer and a converted GGUF model's are workflow outputs; hub and local tokenizers are not."""
    location = TOKENIZERS[wc.tok].tokenizer_location
    if location == LADDER_FILES.tokenizer:
        return [location]
    return [location] if any(location == g.directory for g in GGUF.values()) else []


def dataset(wc):
    """The dataset of a keyed file's wildcards (its stem `<dataset>-<key>`)."""
    stem = next(getattr(wc, k) for k in ("summary", "ranks", "tokens", "corpus") if hasattr(wc, k))
    return LAYOUT.dataset_of(stem)


def tokenizer_users(tok):
    """The models tokenizer key `tok` serves, for messages (a derived param: adding one reruns nothing)."""
    return [name for name, plan in PLAN.items() if plan.tokenizer_key == tok]


def download_users(key):
    return [name for name, plan in PLAN.items() if any(d.key == key for d in extraction_downloads(plan))]


def extract_inputs(wc):
    plan = PLAN[wc.model]
    inputs = {"tokens": LAYOUT.model_tokens(wc.model, dataset(wc))}
    if plan.source.local:
        inputs["model"] = plan.source.location
    # `ancient`: a download made after the rank array (e.g. by a colleague who pulled the arrays with DVC and
    # then added a model) does not make the array stale; nor is it fetched while the array is up to date
    inputs["downloads"] = [ancient(d.record) for d in extraction_downloads(plan)]
    return inputs


def run_final_model(wc):
    """A ladder checkpoint's job starts after its run's final model: that job saves the states the checkpoint
    is exported from, and a checkpoint started beside it would hold a job slot (on a cluster, an allocation)
    waiting for the run's lock. `ancient`: a retrained final model does not make its checkpoints stale."""
    plan = PLAN[wc.model]
    return [] if plan.checkpoint is None else ancient(LADDER_FILES.model(plan.size))


def summarize_inputs(wc):
    """A summary reads its rank array, the token file's and the corpus's sidecars (the dataset's documents: what
    every family's bootstrap draws), and the token table of the model's tokenizer, made by the token_kinds job:
    each token's kind (the `kind` stratum) and its text's UTF-8 byte length (what bits per byte divides by)."""
    name = dataset(wc)
    return {
        "ranks": LAYOUT.ranks(wc.model, name),
        "meta": LAYOUT.ranks(wc.model, name, "json"),
        "tokens_meta": LAYOUT.model_tokens(wc.model, name, "npz.json"),
        "corpus_meta": LAYOUT.corpus(name, "json"),
        "token_table": Layout.token_kinds(PLAN[wc.model].tokenizer_key),
    }


def summaries(suffix="json"):
    return [LAYOUT.summary(m, d, suffix) for m in MODELS for d in DATASETS]


def table_inputs(wc):
    table = TABLES[wc.table]
    return {
        "summaries": summaries() if table.summaries or table.resampled else [],
        "replicates": summaries("boot.npz") if table.resampled else [],
        "tables": [LAYOUT.table(name) for name in table.needs],
        "trajectories": [LAYOUT.trajectories(f, d, "json") for f in FAMILIES for d in DATASETS] if table.trajectories else [],
    }


def family_models(family):
    return [m for m in MODELS if PLAN[m].family == family]


def trajectories_inputs(wc):
    """A family x dataset's trajectories read its models' rank arrays and sidecars (adding a model reruns its family's
    jobs alone), their token files' sidecars, the corpus's (the documents the bootstrap draws) and the token table of
    each tokenizer (the `kind` stratum)."""
    models = family_models(wc.family)
    return {
        "ranks": [LAYOUT.ranks(m, wc.dataset) for m in models],
        "meta": [LAYOUT.ranks(m, wc.dataset, "json") for m in models],
        "tokens_meta": [LAYOUT.model_tokens(m, wc.dataset, "npz.json") for m in models],
        "corpus_meta": LAYOUT.corpus(wc.dataset, "json"),
        "token_table": [Layout.token_kinds(PLAN[m].tokenizer_key) for m in models],
    }


def trajectories_models(wc):
    """What the plan says of each model of the family, and its rank array's identity (the provenance check)."""
    return [
        {"name": m, "info": PLAN[m].info(), "identity": PLAN[m].identity(wc.dataset).params()}
        for m in family_models(wc.family)
    ]


def figure_inputs(wc):
    figure = FIGURES[wc.figure]
    return {
        "tables": [LAYOUT.table(name) for name in figure.tables],
        "hists": summaries("hist.npz") if figure.hists else [],
        "summaries": summaries() if figure.hists or figure.resampled else [],  # they verify both
        "replicates": summaries("boot.npz") if figure.resampled else [],
    }
