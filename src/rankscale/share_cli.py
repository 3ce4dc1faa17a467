"""The command line of workflow/share.py: `remote`, `track`, `push`, `pull`, `restore`, `migrate`.

Each subcommand prints what it did and where (the remote it pushed to or pulled from), and a failure is one
`error:` line that names the file, the remote's location or the configuration, and the command to run next
(rankscale.share does the work, rankscale.remote finds and reads the remote).
"""

from __future__ import annotations

import argparse
import subprocess
import sys
from collections.abc import Sequence
from pathlib import Path

from rankscale.config import ConfigError
from rankscale.dvc_stages import ShareError, read_stages, stage_configs
from rankscale.remote import Location, locate, pull_failure, push_failure, record
from rankscale.share import DEFAULT_CONFIG, config_args, dvc, migrate, pull_targets, restore, track

DESCRIPTION = "Share rank arrays through DVC: record a remote, track, push; pull (or restore) in a clone; migrate."


def command_line(verb: str, config_files: Sequence[str]) -> str:
    """The share.py command a message tells the user to run."""
    return " ".join(["python workflow/share.py", verb, *config_args(config_files)])


def transfer(root: Path, verb: str, config_files: Sequence[str], remote: str | None) -> tuple[Location, list[str]]:
    """`dvc push` or `dvc pull` of the outputs of this configuration that dvc.lock records, printing where first;
    a failure says what the remote holds and what to run, with DVC's own error line (not its whole output)."""
    if not (root / "dvc.lock").exists():
        raise ShareError(f"no dvc.lock: nothing has been tracked yet (run `{command_line('track', config_files)}`, "
                         f"commit, `{command_line('push', config_files)}` first)")  # fmt: skip
    where = locate(root, remote)
    print(where.line(), flush=True)
    targets = pull_targets(root, config_files)
    if not targets:  # a pull goes on: `restore` then names the configurations dvc.yaml tracks
        if verb == "push":
            raise ShareError(
                f"{no_match(root, config_files, 'dvc.lock records no output of ')} (or run "
                f"`{command_line('track', config_files)}` first)"
            )
        return where, targets
    result = subprocess.run(dvc(verb, "--remote", where.name, *targets), cwd=root, capture_output=True, text=True)
    if result.returncode != 0:
        if verb == "push":
            raise ShareError(push_failure(root, where, result.stderr))
        raise ShareError(pull_failure(root, where, targets, result.stderr, command_line("push", config_files)))
    return where, targets


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="workflow/share.py", description=DESCRIPTION)
    sub = parser.add_subparsers(dest="command", required=True)
    where = sub.add_parser(
        "remote", help="show the DVC remote push and pull use, or record one every clone reaches (docs/sharing.md)"
    )
    where.add_argument("location", nargs="?", help="a directory all clones reach (made absolute), or a URL")
    where.add_argument("--local", action="store_true", help="record it in .dvc/config.local: this clone only")
    for name, text in (
        (
            "track",
            "write dvc.yaml for the configured models and record their data in dvc.lock (then: git commit, push)",
        ),
        ("push", "`dvc push` of the configuration's tracked outputs to the remote, saying where"),
        ("restore", "after `dvc pull`: verify pulled rank arrays and mark them up to date for Snakemake"),
        ("pull", "`dvc pull` of the configuration's tracked outputs, saying from where, followed by `restore`"),
        ("migrate", "move the token files and rank arrays of an earlier version to their keyed paths, verified"),
    ):
        cmd = sub.add_parser(name, help=text)
        cmd.add_argument("--configfile", nargs="+", default=[], help="the config files you pass to snakemake")
        if name in ("pull", "push"):
            cmd.add_argument("-r", "--remote", help="DVC remote (default: the repository's default remote)")
    args = parser.parse_args(argv)
    root = Path.cwd()
    try:
        if args.command == "remote":
            print((record(root, args.location, args.local) if args.location else locate(root)).line())
            if args.location and not args.local:
                print("now commit .dvc/config: every clone made from that commit pushes and pulls there")
            return 0
        if args.command == "track":
            stages = track(root, args.configfile)
            print(
                f"dvc.yaml: {len(stages)} stages recorded in dvc.lock; now `git add dvc.yaml dvc.lock`, commit, "
                f"`{command_line('push', args.configfile)}`"
            )
            return 0
        if args.command == "push":
            _, targets = transfer(root, "push", args.configfile, args.remote)
            print(f"{len(targets)} outputs pushed; a clone gets them with `{command_line('pull', args.configfile)}`")
            return 0
        if args.command == "pull":
            transfer(root, "pull", args.configfile, args.remote)
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


def no_match(root: Path, config_files: Sequence[str], what: str = "no pulled rank array matches a model of ") -> str:
    """Why a pull verified nothing (or a push found nothing), and the configurations dvc.yaml tracks (what
    --configfile to pass)."""
    tracked = sorted({" ".join(stage_configs(str(e.get("cmd", "")))) for e in read_stages(root / "dvc.yaml").values()})
    given = " ".join(config_files) or "none (the default configuration)"
    options = ", ".join(f"`--configfile {c}`" if c else "no --configfile" for c in tracked) or "none: dvc.yaml is empty"
    return (
        f"{what}this configuration (--configfile: {given}); dvc.yaml tracks "
        f"{options}: pass the config files the arrays were tracked with"
    )
