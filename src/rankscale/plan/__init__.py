"""The configuration turned into concrete models, keys, checks and per-job settings for the workflow.

- `types`: `ModelPlan` and `Runtime`, what the plan is made of;
- `models`: `build_plan`, one `ModelPlan` per model (ladder sizes, their checkpoints, hub and local entries);
- `keys`: tokenizer keys, the ladder directory, corpus params (file-name keys: `rankscale.canon`);
- `files`: `layout`, every keyed file's key (where the files live: `rankscale.layout`);
- `checks`: what the schema cannot check, before any job starts;
- `settings`: the settings each summary, table and figure job reads.
"""

from rankscale.canon import slug, text_key
from rankscale.config import ConfigError
from rankscale.plan.checks import check_local_model, check_written, read_model_config, unpinned
from rankscale.plan.files import corpus_spec, layout, tokenize_source
from rankscale.plan.keys import (
    corpus_params,
    ladder_dir,
    short_hash,
    tokenizer_params,
    tokenizer_sources,
)
from rankscale.plan.models import Plans, build_plan, checkpoint_name, ladder_models
from rankscale.plan.settings import (
    figure_settings,
    run_checkpoints,
    summary_settings,
    table_settings,
    training_params,
    trajectory_settings,
)
from rankscale.plan.types import RUNTIME_KEYS, ModelPlan, Runtime

__all__ = [
    "RUNTIME_KEYS",
    "ConfigError",
    "ModelPlan",
    "Plans",
    "Runtime",
    "build_plan",
    "check_local_model",
    "check_written",
    "checkpoint_name",
    "corpus_params",
    "corpus_spec",
    "figure_settings",
    "ladder_dir",
    "ladder_models",
    "layout",
    "read_model_config",
    "run_checkpoints",
    "short_hash",
    "slug",
    "summary_settings",
    "table_settings",
    "text_key",
    "tokenize_source",
    "tokenizer_params",
    "tokenizer_sources",
    "training_params",
    "trajectory_settings",
    "unpinned",
]
