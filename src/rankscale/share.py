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

import argparse
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

from rankscale.config import load_yaml
from rankscale.identity import problems
from rankscale.plan import TRAIN_TOKENS, ModelPlan, build_plan

DEFAULT_CONFIG = "config/config.yaml"
DVC_YAML_HEADER = """\
# What DVC versions: written by `python workflow/share.py track` from the configuration; edit
# the config, not this file. Snakemake produces every output (each `cmd` is the Snakemake call
# that does); DVC stores, pushes and pulls them. One stage per model (its rank arrays, and its
# checkpoint for a ladder model), plus the shared inputs a fresh clone would otherwise rebuild.
# docs/sharing.md: "Adding models and sharing rank arrays (DVC)".
"""


class ShareError(RuntimeError):
    """Tracking or restoring cannot go on; the message says which file and what to do."""


@dataclass(frozen=True)
class Stage:
    """One dvc.yaml stage: outputs DVC versions, the upstream outputs they were made from."""

    name: str
    cmd: str
    outs: tuple[str, ...]
    deps: tuple[str, ...] = ()

    def as_dvc(self) -> dict[str, Any]:
        """The stage as dvc.yaml holds it; `persist` keeps `dvc repro` from deleting outputs first."""
        entry: dict[str, Any] = {"cmd": self.cmd}
        if self.deps:
            entry["deps"] = list(self.deps)
        entry["outs"] = [{out: {"persist": True}} for out in self.outs]
        return entry


@dataclass
class Restored:
    """What `restore` found, by (model, dataset): arrays marked up to date, arrays left to recompute."""

    verified: list[tuple[str, str]] = field(default_factory=list)
    stale: dict[tuple[str, str], list[str]] = field(default_factory=dict)


def load_config(config_files: Sequence[str], root: Path = Path(".")) -> dict[str, Any]:
    """The config Snakemake runs with for `--configfile config_files` (see the Snakefile).

    Files merge in order (nested dicts merge, lists are replaced); unless they define `datasets`
    they are overrides on top of config/config.yaml, as in the Snakefile.
    """
    from snakemake.utils import update_config

    given: dict[str, Any] = {}
    for name in config_files:
        update_config(given, load_yaml(root / name) or {})
    if "datasets" in given:
        return given
    config = load_yaml(root / DEFAULT_CONFIG)
    update_config(config, given)
    return config


def rank_paths(model: str, dataset: str) -> tuple[str, str]:
    return f"results/ranks/{model}/{dataset}.npz", f"results/ranks/{model}/{dataset}.json"


def stage_name(prefix: str, key: str) -> str:
    """DVC stage names allow letters, digits, '_' and '-' only; model and tokenizer keys may hold '.' or '@'."""
    return f"{prefix}-{re.sub(r'[^A-Za-z0-9_-]', '_', key)}"


def snakemake_cmd(config_files: Sequence[str], targets: Sequence[str]) -> str:
    """Targets before `--configfile`, which would otherwise swallow them as more config files."""
    return " ".join(["snakemake --cores all", *targets, *config_args(config_files)])


def dvc_stages(plans: Mapping[str, ModelPlan], datasets: Sequence[str], config_files: Sequence[str]) -> list[Stage]:
    """Every stage for this plan: shared inputs first, then one per model."""
    corpus = tuple(f"results/corpus/{d}.{ext}" for d in datasets for ext in ("jsonl", "json"))
    home = next((str(Path(p.source.location).parent.parent) for p in plans.values() if p.ladder), None)
    # the training text (and its token ids, which every training job reads) and the tokenizer
    ladder = (
        (f"{home}/train_corpus.jsonl", f"{home}/{TRAIN_TOKENS}", f"{home}/tokenizer", f"{home}/train_tokens.npz")
        if home
        else ()
    )
    stages = [Stage("corpus", snakemake_cmd(config_files, corpus), corpus)]
    if home:
        stages.append(Stage("ladder", snakemake_cmd(config_files, ladder[2:]), ladder))
    for key in dict.fromkeys(p.tokenizer_key for p in plans.values()):
        targets = [f"results/tokens/{key}/{d}.npz" for d in datasets]
        deps = corpus + ((f"{home}/tokenizer",) if key == "ladder" else ())
        stages.append(
            Stage(stage_name("tokens", key), snakemake_cmd(config_files, targets), (f"results/tokens/{key}",), deps)
        )
    for name, plan in plans.items():
        targets = [rank_paths(name, d)[0] for d in datasets]
        outs = (f"results/ranks/{name}",) + ((plan.source.location,) if plan.ladder else ())
        deps = (f"results/tokens/{plan.tokenizer_key}",) + (ladder if plan.ladder else ())
        stages.append(Stage(stage_name("model", name), snakemake_cmd(config_files, targets), outs, deps))
    names = [s.name for s in stages]
    clashes = sorted({n for n in names if names.count(n) > 1})
    if clashes:
        raise ShareError(
            f"models or tokenizers whose names differ only in punctuation share DVC stage names {clashes}; rename one"
        )
    return stages


def write_dvc_yaml(path: Path, stages: Sequence[Stage]) -> None:
    """Rewrite dvc.yaml for exactly these stages (a model removed from the config loses its stage)."""
    body = yaml.safe_dump({"stages": {s.name: s.as_dvc() for s in stages}}, sort_keys=False, width=1000)
    tmp = path.with_name(f".{path.name}.tmp")
    tmp.write_text(DVC_YAML_HEADER + body)
    os.replace(tmp, path)


def sidecar_mismatches(
    meta: Mapping[str, Any], plan: ModelPlan, dataset: str, tokens_meta: Mapping[str, Any] | None
) -> list[str]:
    """Why a pulled rank array (results/ranks/<plan.name>/<dataset>.npz) does not belong to this configuration."""
    misplaced, stale = problems(meta, plan.name, dataset, plan.identity(dataset), tokens_meta)
    return misplaced + stale


def check_arrays(plans: Mapping[str, ModelPlan], datasets: Sequence[str], root: Path) -> Restored:
    """Sort the rank arrays present under `root` into verified and stale ones."""
    found = Restored()
    for name, plan in plans.items():
        for dataset in datasets:
            npz, meta_path = (root / p for p in rank_paths(name, dataset))
            if not (npz.exists() and meta_path.exists()):
                continue
            tokens_path = root / f"results/tokens/{plan.tokenizer_key}/{dataset}.npz.json"
            tokens_meta = json.loads(tokens_path.read_text()) if tokens_path.exists() else None
            problems = sidecar_mismatches(json.loads(meta_path.read_text()), plan, dataset, tokens_meta)
            if problems:
                found.stale[(name, dataset)] = problems
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
    config = load_config(config_files, root)
    plans, datasets = build_plan(config, check_paths=False), list(config["datasets"])
    stages = dvc_stages(plans, datasets, config_files)
    expected = [out for s in stages for out in s.outs] + [p for m in plans for d in datasets for p in rank_paths(m, d)]
    missing = [path for path in expected if not (root / path).exists()]
    if missing:
        raise ShareError(f"run Snakemake to completion first; missing: {', '.join(sorted(set(missing)))}")
    write_dvc_yaml(root / "dvc.yaml", stages)
    # --no-relink: the workspace files stay as they are (bytes, inode and mtime), so Snakemake
    # sees nothing new; the cache gets a copy (or a reflink where the filesystem has them).
    run(dvc("commit", "--force", "--no-relink", "--quiet", *(s.name for s in stages)), root)
    return stages


def restore(root: Path, config_files: Sequence[str]) -> Restored:
    """After `dvc pull` (and any git checkout): make Snakemake see pulled arrays as up to date."""
    config = load_config(config_files, root)
    plans = build_plan(config, check_paths=False)
    datasets = list(config["datasets"])
    found = check_arrays(plans, datasets, root)
    if found.verified:
        models = {model for model, _ in found.verified}
        upstream = [
            out
            for s in dvc_stages({m: plans[m] for m in models}, datasets, config_files)
            for out in s.outs
            if not out.startswith("results/ranks/")
        ]
        missing = [out for out in upstream if not (root / out).exists()]
        if missing:
            raise ShareError(f"pulled data is incomplete, run `dvc pull` first; missing: {', '.join(missing)}")
        targets = [path for key in found.verified for path in rank_paths(*key)]
        run(snakemake(*targets, "--touch", "--forceall", "--cores", "1", "--quiet", *config_args(config_files)), root)
    for key in found.stale:
        for path in rank_paths(*key):
            os.utime(root / path, (0, 0))  # older than its inputs, so Snakemake recomputes it
    return found


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="workflow/share.py", description=__doc__.split("\n\n")[0])
    sub = parser.add_subparsers(dest="command", required=True)
    for name, text in (
        (
            "track",
            "write dvc.yaml for the configured models and record their data in dvc.lock (then: git commit, dvc push)",
        ),
        ("restore", "after `dvc pull`: verify pulled rank arrays and mark them up to date for Snakemake"),
        ("pull", "`dvc pull` followed by `restore`"),
    ):
        cmd = sub.add_parser(name, help=text)
        cmd.add_argument("--configfile", nargs="+", default=[], help="the config files you pass to snakemake")
        if name == "pull":
            cmd.add_argument("-r", "--remote", help="DVC remote (default: the repository's default remote)")
    args = parser.parse_args(argv)
    root = Path.cwd()
    try:
        if args.command == "track":
            stages = track(root, args.configfile)
            print(
                f"dvc.yaml: {len(stages)} stages recorded in dvc.lock; now `git add dvc.yaml dvc.lock`, commit, `dvc push`"
            )
            return 0
        if args.command == "pull":
            if not (root / "dvc.lock").exists():
                raise ShareError("no dvc.lock: nothing has been shared yet (run `track`, commit, `dvc push` first)")
            run(dvc("pull", *(["--remote", args.remote] if args.remote else [])), root)
        found = restore(root, args.configfile)
    except ShareError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 1
    print(f"{len(found.verified)} rank arrays verified and marked up to date")
    for (model, dataset), why in found.stale.items():
        print(f"{rank_paths(model, dataset)[0]}: will be recomputed: {'; '.join(why)}")
    return 0
