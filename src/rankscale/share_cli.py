"""The command line of workflow/share.py: `track`, `pull`, `restore`, `migrate` (rankscale.share does the work)."""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence
from pathlib import Path

from rankscale.config import ConfigError
from rankscale.dvc_stages import ShareError, read_stages, stage_configs
from rankscale.share import DEFAULT_CONFIG, dvc, migrate, pull_targets, restore, run, track

DESCRIPTION = "Share rank arrays through DVC: track (then git commit, dvc push); pull (or restore) in a clone; migrate."


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="workflow/share.py", description=DESCRIPTION)
    sub = parser.add_subparsers(dest="command", required=True)
    for name, text in (
        (
            "track",
            "write dvc.yaml for the configured models and record their data in dvc.lock (then: git commit, dvc push)",
        ),
        ("restore", "after `dvc pull`: verify pulled rank arrays and mark them up to date for Snakemake"),
        ("pull", "`dvc pull` followed by `restore`"),
        ("migrate", "move the token files and rank arrays of an earlier version to their keyed paths, verified"),
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
            targets = pull_targets(root, args.configfile)
            if targets:  # none tracked: nothing to pull for this configuration, and `restore` says what is
                run(dvc("pull", *(["--remote", args.remote] if args.remote else []), *targets), root)
        if args.command == "migrate":
            done, found = migrate(root, args.configfile)
            print(f"{len(done.moved)} files moved to their keyed paths")
            for path, why in done.left.items():
                print(f"{path}: left in place: {why}")
        else:
            found = restore(root, args.configfile)
    except ShareError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 1
    except ConfigError as exc:  # as the workflow prints it: one line per problem, naming the file
        from rankscale.plan.errors import error_lines

        print("\n".join(error_lines(exc, args.configfile, DEFAULT_CONFIG)), file=sys.stderr)
        return 1
    print(f"{len(found.verified)} rank arrays verified and marked up to date")
    for path, why in found.stale.items():
        print(f"{path}: will be recomputed: {'; '.join(why)}")
    if not found.verified:  # nothing pulled serves this configuration: most often the wrong (or no) --configfile
        print(f"error: {no_match(root, args.configfile)}", file=sys.stderr)
        return 1
    return 0


def no_match(root: Path, config_files: Sequence[str]) -> str:
    """Why a pull verified nothing, and the configurations dvc.yaml tracks (what --configfile to pass)."""
    tracked = sorted({" ".join(stage_configs(str(e.get("cmd", "")))) for e in read_stages(root / "dvc.yaml").values()})
    given = " ".join(config_files) or "none (the default configuration)"
    options = ", ".join(f"`--configfile {c}`" if c else "no --configfile" for c in tracked) or "none: dvc.yaml is empty"
    return (
        f"no pulled rank array matches a model of this configuration (--configfile: {given}); dvc.yaml tracks "
        f"{options}: pass the config files the arrays were tracked with"
    )
