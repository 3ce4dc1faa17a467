# Validate the configuration before any job starts and resolve it into a plan.

import re
import sys
from pathlib import Path

SRC = str(Path(workflow.basedir) / "src")
if SRC not in sys.path:
    sys.path.insert(0, SRC)

from rankscale.plan import LADDER_DIR, ConfigError, build_plan, check_schema, tokenizer_sources  # noqa: E402

try:
    check_schema(config, Path(workflow.basedir) / "config/schema.yaml")
    PLAN = build_plan(config)
except ConfigError as exc:
    raise WorkflowError(f"config error: {exc}") from None

MODELS = list(PLAN)
DATASETS = list(config["datasets"])
TOKENIZERS = tokenizer_sources(PLAN)
LADDER = config.get("ladder")
LADDER_SIZES = {s["name"]: s for s in LADDER["sizes"]} if LADDER else {}

# every k a figure shows is on the k grid (figures read RBP_k from metrics.csv)
ANALYSIS = {
    **config["analysis"],
    "k_include": sorted(
        set(config["analysis"].get("k_include", []))
        | set(config["figures"].get("rbp_k", []))
        | set(config["figures"].get("large_k", []))
    ),
}

FIGURE_NAMES = [
    "fig3_rbp1",
    "fig4_rbp_k",
    "fig5_large_k",
    "fig6_r2_alpha_vs_k",
    "fig7_emergence",
    "fig8a_ce_vs_rbp1",
    "fig8b_rank_histogram",
    "fig8c_mu_sigma",
]
TABLE_NAMES = ["metrics", "powerlaw_fits", "lognormal_fits", "emergence"]
TABLES = expand("results/tables/{name}.csv", name=TABLE_NAMES)
FIGURES = expand("results/figures/{name}.{ext}", name=FIGURE_NAMES, ext=["png", "pdf"])


wildcard_constraints:
    model="|".join(map(re.escape, MODELS)),
    dataset="|".join(map(re.escape, DATASETS)),
    tok="[A-Za-z0-9._@-]+",


def runtime_setting(model, key, default=None):
    value = PLAN[model].runtime.get(key)
    return default if value is None else value


def tokenizer_input(wc):
    """The ladder tokenizer is a workflow output; hub and local tokenizers are not."""
    return [f"{LADDER_DIR}/tokenizer"] if wc.tok == "ladder" else []


def corpus_spec(dataset):
    """What a corpus depends on: its entry less the settings later steps apply (so no needless rerun)."""
    return {k: v for k, v in config["datasets"][dataset].items() if k not in ("windows", "max_scored_tokens")}


def tokenizer_params(tok):
    """What tokenizer key `tok` loads, independent of which model lists it first.

    Taking the first model's whole source would change these params (so re-tokenize, so
    re-extract every model sharing the key) whenever that first model is removed or reordered.
    """
    source = TOKENIZERS[tok]
    return {
        "name": tok,
        "location": source.tokenizer_location,
        "revision": source.tokenizer_ref,
        "local": source.local if source.tokenizer is None else source.tokenizer_ref is None,
        "tokenizer": None,
        "trust_remote_code": source.trust_remote_code,
        "allow_pickle": source.allow_pickle,
    }


def extract_inputs(wc):
    plan = PLAN[wc.model]
    inputs = {"tokens": f"results/tokens/{plan.tokenizer_key}/{wc.dataset}.npz"}
    if plan.source.local:
        inputs["model"] = plan.source.location
    return inputs


def figure_output(name):
    return report(f"results/figures/{name}.png", caption=f"../report/{name}.rst", category="Figures")
