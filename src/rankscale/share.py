"""Share rank arrays through DVC, and make a pulled clone consistent for Snakemake again.

What DVC tracks (one `dvc.yaml` stage each, written by `track`):

- `model-<name>`: the model's rank arrays `results/ranks/<name>/` and, for a ladder model, its
  checkpoint. Adding a model adds one stage, so `dvc push` uploads only that model's data.
- `tokens-<key>`, `corpus`, `ladder`: the inputs Snakemake would otherwise rebuild in a fresh
  clone. Without them, a colleague who adds a model would re-tokenize (or retrain the ladder
  tokenizer), and everything downstream of those files, i.e. every rank array, would rerun.

DVC restores content, not modification times, and a fresh clone has no `.snakemake/` metadata,
so Snakemake can neither order the pulled files nor see parameter changes. `restore` checks
every pulled rank array's sidecar against the current configuration, then lets Snakemake itself
`--touch` the verified arrays and their upstream in DAG order (which also records metadata, so
later config edits are detected again). Arrays that do not match are backdated so Snakemake
recomputes them.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

from rankscale.config import SCHEMA_PATH, validate
from rankscale.dvc_stages import ShareError, Stage, merge, read_stages
from rankscale.identity import CORPUS_SHA, OWN_SHA, problems
from rankscale.layout import Layout
from rankscale.plan import ModelPlan, build_plan, layout

DEFAULT_CONFIG = "config/config.yaml"
DVC_YAML_HEADER = """\
# What DVC versions: written by `python workflow/share.py track` from the configuration; edit
# the config, not this file. Snakemake produces every output (each `cmd` is the Snakemake call
# that does); DVC stores, pushes and pulls them. One stage per model (its rank arrays, and its
# checkpoint for a ladder model), plus the shared inputs a fresh clone would otherwise rebuild.
# docs/sharing.md: "Adding models and sharing rank arrays (DVC)".
"""


@dataclass
class Restored:
    """What `restore` found: arrays marked up to date (model, dataset), arrays left to recompute (path: why)."""

    verified: list[tuple[str, str]] = field(default_factory=list)
    stale: dict[str, list[str]] = field(default_factory=dict)


def load_config(config_files: Sequence[str], root: Path = Path(".")) -> dict[str, Any]:
    """The config Snakemake runs with for `--configfile config_files` (see the Snakefile).

    Files merge in order (nested dicts merge, lists are replaced); unless they define `datasets`
    they are overrides on top of config/config.yaml, as in the Snakefile (`load_like_snakemake`).
    """
    from rankscale.plan.prepare import load_like_snakemake

    return load_like_snakemake([root / name for name in config_files], root / DEFAULT_CONFIG).config


def configured(config_files: Sequence[str], root: Path) -> tuple[dict[str, Any], dict[str, ModelPlan], Layout]:
    """The configuration, its plan and its file layout, as the workflow resolves them."""
    config = validate(load_config(config_files, root), SCHEMA_PATH)
    plans = build_plan(config, check_paths=False, validated=True)
    return config, plans, layout(config, plans, [root / f for f in config_files], root / DEFAULT_CONFIG)


def rank_paths(files: Layout, model: str, dataset: str) -> tuple[str, str]:
    return files.ranks(model, dataset), files.ranks(model, dataset, "json")


def stage_name(prefix: str, key: str) -> str:
    """DVC stage names allow letters, digits, '_' and '-' only; model and tokenizer keys may hold '.' or '@'."""
    return f"{prefix}-{re.sub(r'[^A-Za-z0-9_-]', '_', key)}"


def snakemake_cmd(config_files: Sequence[str], targets: Sequence[str]) -> str:
    """Targets before `--configfile`, which would otherwise swallow them as more config files."""
    return " ".join(["snakemake --cores all", *targets, *config_args(config_files)])


def dvc_stages(
    plans: Mapping[str, ModelPlan], datasets: Sequence[str], config_files: Sequence[str], files: Layout
) -> list[Stage]:
    """Every stage for this plan: shared inputs first, then one per model."""
    corpus = tuple(files.corpus(d, ext) for d in datasets for ext in ("jsonl", "json"))
    home = files.ladder if any(p.ladder for p in plans.values()) else None
    # the training text (and its token ids, which every training job reads) and the tokenizer
    ladder = (home.corpus, home.counts, home.tokenizer, home.tokens) if home else ()
    stages = [Stage("corpus", snakemake_cmd(config_files, corpus), corpus)]
    if home:
        stages.append(Stage("ladder", snakemake_cmd(config_files, ladder[2:]), ladder))
    ladder_key = next((p.tokenizer_key for p in plans.values() if p.ladder), None)
    for key in dict.fromkeys(p.tokenizer_key for p in plans.values()):
        targets = [files.tokens(key, d) for d in datasets]
        deps = corpus + ((home.tokenizer,) if home and key == ladder_key else ())
        stages.append(
            Stage(stage_name("tokens", key), snakemake_cmd(config_files, targets), (files.tokens_dir(key),), deps)
        )
    for name, plan in plans.items():
        targets = [files.ranks(name, d) for d in datasets]
        outs = (files.ranks_dir(name),) + ((plan.source.location,) if plan.ladder else ())
        deps = (files.tokens_dir(plan.tokenizer_key),) + (ladder if plan.ladder else ())
        stages.append(Stage(stage_name("model", name), snakemake_cmd(config_files, targets), outs, deps))
    names = [s.name for s in stages]
    clashes = sorted({n for n in names if names.count(n) > 1})
    if clashes:
        raise ShareError(
            f"models or tokenizers whose names differ only in punctuation share DVC stage names {clashes}; rename one"
        )
    return stages


def write_dvc_yaml(path: Path, stages: Sequence[Stage] | Mapping[str, dict[str, Any]]) -> None:
    """Rewrite dvc.yaml for exactly these stages (a model removed from the config loses its stage)."""
    entries = stages if isinstance(stages, Mapping) else {s.name: s.as_dvc() for s in stages}
    body = yaml.safe_dump({"stages": dict(entries)}, sort_keys=False, width=1000)
    tmp = path.with_name(f".{path.name}.tmp")
    tmp.write_text(DVC_YAML_HEADER + body)
    os.replace(tmp, path)


def sidecar_mismatches(
    meta: Mapping[str, Any], plan: ModelPlan, dataset: str, tokens_meta: Mapping[str, Any] | None
) -> list[str]:
    """Why a pulled rank array (results/ranks/<plan.name>/<dataset>.npz) does not belong to this configuration."""
    misplaced, stale = problems(meta, plan.name, dataset, plan.identity(dataset), tokens_meta)
    return misplaced + stale


def check_arrays(plans: Mapping[str, ModelPlan], datasets: Sequence[str], root: Path, files: Layout) -> Restored:
    """Sort the rank arrays present under `root` into verified and stale ones."""
    found = Restored()
    for name, plan in plans.items():
        for dataset in datasets:
            npz, meta_path = (root / p for p in rank_paths(files, name, dataset))
            if not (npz.exists() and meta_path.exists()):
                continue
            tokens_path = root / files.model_tokens(name, dataset, "npz.json")
            tokens_meta = json.loads(tokens_path.read_text()) if tokens_path.exists() else None
            problems = sidecar_mismatches(json.loads(meta_path.read_text()), plan, dataset, tokens_meta)
            if problems:
                found.stale[rank_paths(files, name, dataset)[0]] = problems
            else:
                found.verified.append((name, dataset))
    return found


def run(cmd: Sequence[str], root: Path) -> None:
    """Run a DVC or Snakemake command; on failure show its output and stop."""
    result = subprocess.run(list(cmd), cwd=root, capture_output=True, text=True)
    if result.returncode != 0:
        raise ShareError(f"`{' '.join(cmd)}` failed:\n{result.stdout[-4000:]}\n{result.stderr[-4000:]}")


def dvc(*args: str) -> list[str]:
    return [sys.executable, "-m", "dvc", *args]


def snakemake(*args: str) -> list[str]:
    return [sys.executable, "-m", "snakemake", *args]


def config_args(config_files: Sequence[str]) -> list[str]:
    return ["--configfile", *config_files] if config_files else []


def track(root: Path, config_files: Sequence[str]) -> list[Stage]:
    """Write dvc.yaml for the current plan and record the outputs' hashes in dvc.lock."""
    config, plans, files = configured(config_files, root)
    datasets = list(config["datasets"])
    stages = dvc_stages(plans, datasets, config_files, files)
    expected = [out for s in stages for out in s.outs] + [
        p for m in plans for d in datasets for p in rank_paths(files, m, d)
    ]
    missing = [path for path in expected if not (root / path).exists()]
    if missing:
        raise ShareError(f"run Snakemake to completion first; missing: {', '.join(sorted(set(missing)))}")
    # every other configuration's stages stay as they are (rankscale.dvc_stages)
    merged = merge(read_stages(root / "dvc.yaml"), stages, config_files, files.run, root)
    write_dvc_yaml(root / "dvc.yaml", merged.stages)
    # --no-relink: the workspace files stay as they are (bytes, inode and mtime), so Snakemake
    # sees nothing new; the cache gets a copy (or a reflink where the filesystem has them).
    run(dvc("commit", "--force", "--no-relink", "--quiet", *merged.ours, *merged.shared), root)
    return [Stage(name, merged.stages[name]["cmd"], tuple(merged.stages[name]["outs"])) for name in merged.ours]


def pull_targets(root: Path, config_files: Sequence[str]) -> list[str]:
    """The outputs this configuration needs that dvc.lock records: a plain `dvc pull` would also fetch every other
    stage of dvc.yaml (the default's ladder, which a study's remote need not hold) and fail on their absence."""
    config, plans, files = configured(config_files, root)
    lock = yaml.safe_load((root / "dvc.lock").read_text()) or {}
    tracked = {str(out.get("path")) for entry in (lock.get("stages") or {}).values() for out in entry.get("outs") or []}
    needed = [out for s in dvc_stages(plans, list(config["datasets"]), config_files, files) for out in s.outs]
    return [out for out in dict.fromkeys(needed) if out in tracked]


def restore(root: Path, config_files: Sequence[str]) -> Restored:
    """After `dvc pull` (and any git checkout): make Snakemake see pulled arrays as up to date."""
    config, plans, files = configured(config_files, root)
    datasets = list(config["datasets"])
    found = check_arrays(plans, datasets, root, files)
    if found.verified:
        models = {model for model, _ in found.verified}
        upstream = [
            out
            for s in dvc_stages({m: plans[m] for m in models}, datasets, config_files, files)
            for out in s.outs
            if out not in {files.ranks_dir(m) for m in models}
        ]
        missing = [out for out in upstream if not (root / out).exists()]
        if missing:
            raise ShareError(f"pulled data is incomplete, run `dvc pull` first; missing: {', '.join(missing)}")
        targets = [path for key in found.verified for path in rank_paths(files, *key)]
        run(snakemake(*targets, "--touch", "--forceall", "--cores", "1", "--quiet", *config_args(config_files)), root)
    for npz in found.stale:
        for path in (npz, str(Path(npz).with_suffix(".json"))):
            # older than its inputs, so Snakemake recomputes it; 1 s, not 0: Snakemake skips the age comparison for
            # an output time of 0 (a falsy value), and a pulled array has no metadata to be rerun by instead
            os.utime(root / path, (1, 1))
    return found


@dataclass
class Migrated:
    """What `migrate` moved from the unkeyed paths of earlier versions, and what it left (path: why)."""

    moved: list[str] = field(default_factory=list)
    left: dict[str, str] = field(default_factory=dict)


def migrate(root: Path, config_files: Sequence[str]) -> tuple[Migrated, Restored]:
    """Move token files and rank arrays from the paths of earlier versions (`results/tokens/<tok>/<dataset>.npz`,
    `results/ranks/<model>/<dataset>.npz`) to this configuration's keyed paths, then `restore` them.

    Nothing is taken on trust: the corpora are made afresh (cheap), a token file moves only if it was cut from
    exactly that corpus (checksum), with this tokenizer and tokenization, and `restore` then checks each rank
    array against the token file it was computed from. What does not match stays where it was."""
    config, plans, files = configured(config_files, root)
    datasets = list(config["datasets"])
    run(snakemake(*(files.corpus(d, ext) for d in datasets for ext in ("jsonl", "json")), "--cores", "1",
                  "--quiet", *config_args(config_files)), root)  # fmt: skip
    done = Migrated()
    sources = {p.tokenizer_key: p.source for p in plans.values()}
    special = config["tokenization"]["add_special_tokens"]
    for tok, source in sources.items():
        old_tok = "ladder" if any(p.ladder and p.tokenizer_key == tok for p in plans.values()) else tok
        for d in datasets:
            old = root / f"results/tokens/{old_tok}/{d}.npz"
            if not old.exists():
                continue
            meta = json.loads(Path(f"{old}.json").read_text())
            corpus = json.loads((root / files.corpus(d, "json")).read_text())
            why = [
                what
                for what, ok in (
                    ("cut from another corpus", meta.get(CORPUS_SHA) == corpus[OWN_SHA]),
                    ("another tokenizer", meta.get("tokenizer") == source.tokenizer_location),
                    ("other special tokens", meta.get("add_special_tokens") == special),
                )
                if not ok
            ]
            if why:
                done.left[str(old.relative_to(root))] = ", ".join(why)
                continue
            done.moved += _move(
                root, [(old, files.tokens(tok, d)), (Path(f"{old}.json"), files.tokens(tok, d, "npz.json"))]
            )
    for name, plan in plans.items():
        for d in datasets:
            old = root / f"results/ranks/{name}/{d}.npz"
            tokens = root / files.tokens(plan.tokenizer_key, d, "npz.json")
            if not (old.exists() and old.with_suffix(".json").exists() and tokens.exists()):
                continue
            misplaced, stale = problems(
                json.loads(old.with_suffix(".json").read_text()), name, d, plan.identity(d),
                json.loads(tokens.read_text()),
            )  # fmt: skip
            if misplaced or stale:
                done.left[str(old.relative_to(root))] = "; ".join(misplaced + stale)
            else:
                done.moved += _move(
                    root, list(zip((old, old.with_suffix(".json")), rank_paths(files, name, d), strict=True))
                )
    return done, restore(root, config_files)


def _move(root: Path, pairs: Sequence[tuple[Path, str]]) -> list[str]:
    """Rename each file to its keyed path (modification times kept), unless that path is taken."""
    moved = []
    for old, new in pairs:
        target = root / new
        if not target.exists():
            target.parent.mkdir(parents=True, exist_ok=True)
            os.replace(old, target)
            moved.append(new)
    return moved
